//! The contract of [`ObjectStorage`], checked on the memory and directory backends, and
//! the uploader over them and over a store that fails on purpose.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn range(offset: u64, len: u64) -> Option<ByteRange> {
    Some(ByteRange { offset, len })
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Everything every backend must do; `not_found` tells a missing object's error.
fn contract(store: &dyn ObjectStorage, not_found: fn(&Error) -> bool) {
    let data = bytes(1000, 7);
    store.put("ds/0", data.clone()).unwrap();
    assert_eq!(store.get("ds/0", None).unwrap(), data);
    assert_eq!(store.get("ds/0", range(10, 20)).unwrap(), &data[10..30]);
    assert_eq!(store.get("ds/0", range(990, 10)).unwrap(), &data[990..]);
    assert_eq!(store.get("ds/0", range(1000, 0)).unwrap(), Vec::<u8>::new());
    assert_eq!(store.size_of("ds/0").unwrap(), Some(1000));

    // A range past the end: an error naming the object, its size and the range.
    for (offset, len) in [(990, 11), (1000, 1), (5000, 3), (u64::MAX, 2)] {
        let err = store.get("ds/0", range(offset, len)).unwrap_err();
        assert!(matches!(err, Error::Truncated { .. }), "{err}");
        let message = err.to_string();
        let object = store.object_name("ds/0");
        assert!(message.contains(&object), "{message}");
        assert!(message.contains("(1000 bytes)"), "{message}");
        assert!(
            message.contains(&format!("needs {len} bytes at offset {offset}")),
            "{message}"
        );
    }

    // A missing object: an error naming it.
    let err = store.get("ds/missing", None).unwrap_err();
    assert!(not_found(&err), "{err}");
    assert!(
        err.to_string().contains(&store.object_name("ds/missing")),
        "{err}"
    );
    let err = store.get("ds/missing", range(0, 1)).unwrap_err();
    assert!(not_found(&err), "{err}");
    assert_eq!(store.size_of("ds/missing").unwrap(), None);

    // The anchor at `ds` beside the pages `ds/0`, `ds/1`; and neighbours.
    store.put("ds", b"anchor".to_vec()).unwrap();
    store.put("ds/1", Vec::new()).unwrap();
    store.put("ds2", b"other".to_vec()).unwrap();
    store.put("ds/sub/x", b"deep".to_vec()).unwrap();
    assert_eq!(store.get("ds", None).unwrap(), b"anchor");
    assert_eq!(store.get("ds/1", None).unwrap(), Vec::<u8>::new());
    assert_eq!(store.size_of("ds/1").unwrap(), Some(0));
    assert_eq!(store.get("ds/0", None).unwrap(), data);

    let all = ["ds", "ds/0", "ds/1", "ds/sub/x", "ds2"];
    assert_eq!(store.list("").unwrap(), all);
    assert_eq!(store.list("ds").unwrap(), all);
    assert_eq!(store.list("ds/").unwrap(), ["ds/0", "ds/1", "ds/sub/x"]);
    assert_eq!(store.list("ds/s").unwrap(), ["ds/sub/x"]);
    assert_eq!(store.list("ds/sub/").unwrap(), ["ds/sub/x"]);
    assert_eq!(store.list("ds2").unwrap(), ["ds2"]);
    assert_eq!(store.list("d").unwrap(), all);
    assert!(store.list("x").unwrap().is_empty());
    assert!(store.list("ds/nothing/").unwrap().is_empty());
    assert!(store.list("../").unwrap().is_empty());
    assert!(store.list("/").unwrap().is_empty());

    // Replacing.
    store.put("ds", b"anchor v2".to_vec()).unwrap();
    assert_eq!(store.get("ds", None).unwrap(), b"anchor v2");

    // Many at once, in order; the first failing request's error.
    let requests = vec![
        ("ds/0".to_string(), range(1, 2)),
        ("ds".to_string(), None),
        ("ds/0".to_string(), None),
    ];
    assert_eq!(
        store.get_many(&requests).unwrap(),
        vec![data[1..3].to_vec(), b"anchor v2".to_vec(), data.clone()]
    );
    let failing = vec![
        ("ds".to_string(), None),
        ("ds/gone".to_string(), None),
        ("ds/0".to_string(), range(999, 5)),
    ];
    let err = store.get_many(&failing).unwrap_err();
    assert!(not_found(&err), "{err}");
    assert!(
        err.to_string().contains(&store.object_name("ds/gone")),
        "{err}"
    );
    assert!(store.get_many(&[]).unwrap().is_empty());

    // Deleting: a missing object is no error.
    for key in all {
        store.delete(key).unwrap();
        store.delete(key).unwrap();
        assert_eq!(store.size_of(key).unwrap(), None);
    }
    assert!(store.list("").unwrap().is_empty());

    // Invalid keys, everywhere.
    for key in [
        "", "/abs", "a/", "a//b", "../x", "a/../b", "./a", "a/.", "..", "a\0b", "a\nb",
    ] {
        let invalid = |r: Result<()>| matches!(r, Err(Error::InvalidArgument(_)));
        assert!(invalid(store.put(key, vec![1])), "put {key:?}");
        assert!(invalid(store.get(key, None).map(|_| ())), "get {key:?}");
        assert!(invalid(store.size_of(key).map(|_| ())), "size_of {key:?}");
        assert!(invalid(store.delete(key)), "delete {key:?}");
        let err = store.put(key, vec![1]).unwrap_err().to_string();
        assert!(err.contains("not a valid object key"), "{err}");
    }
    assert!(store.list("").unwrap().is_empty());
}

fn is_not_found(err: &Error) -> bool {
    matches!(err, Error::NotFound(_))
}

#[test]
fn memory_objects_keep_the_contract() {
    let store = MemoryObjects::new("mem://test");
    contract(&store, is_not_found);
    // Clones share the objects.
    let other = store.clone();
    other.put("k", vec![1, 2]).unwrap();
    assert_eq!(store.get("k", None).unwrap(), [1, 2]);
    assert_eq!(store.object("k").as_deref(), Some(&vec![1, 2]));
    assert_eq!(store.len(), 1);
    let err = store.get("nope", None).unwrap_err().to_string();
    assert_eq!(err, "no object mem://test/nope");
}

#[test]
fn directory_objects_keep_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirectoryObjects::create(dir.path().join("objects")).unwrap();
    // The root is created by the first put, not before.
    assert!(!store.root().exists());
    contract(&store, is_not_found);
    // Every directory the objects needed is gone with them, the root the store
    // created too; the directory it was created in stays.
    assert!(!store.root().exists());
    assert!(dir.path().is_dir());
}

#[test]
fn metrics_count_the_gets() {
    let store = MemoryObjects::default();
    store.put("a", bytes(100, 1)).unwrap();
    store.get("a", None).unwrap();
    store.get("a", range(0, 10)).unwrap();
    store.get_many(&[("a".into(), range(5, 5))]).unwrap();
    let metrics = store.metrics();
    assert_eq!(
        (metrics.requests, metrics.ranges, metrics.bytes_read),
        (3, 3, 115)
    );
    assert_eq!(metrics.vector_requests, 0);
}

#[test]
fn directory_layout_lets_a_key_be_an_object_and_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirectoryObjects::create(dir.path()).unwrap();
    store.put("ds", b"anchor".to_vec()).unwrap();
    store.put("ds/0", b"page".to_vec()).unwrap();
    // Keys that look like the suffixes are keys like any other.
    store.put("x.obj", b"1".to_vec()).unwrap();
    store.put("x.d", b"2".to_vec()).unwrap();
    store.put("x/y", b"3".to_vec()).unwrap();
    store.put("x.obj/z", b"4".to_vec()).unwrap();
    let root = dir.path();
    assert_eq!(store.path_of("ds").unwrap(), root.join("ds.obj"));
    assert_eq!(store.path_of("ds/0").unwrap(), root.join("ds.d/0.obj"));
    assert_eq!(std::fs::read(root.join("ds.obj")).unwrap(), b"anchor");
    assert_eq!(std::fs::read(root.join("ds.d/0.obj")).unwrap(), b"page");
    assert_eq!(std::fs::read(root.join("x.obj.obj")).unwrap(), b"1");
    assert_eq!(std::fs::read(root.join("x.d.obj")).unwrap(), b"2");
    assert_eq!(std::fs::read(root.join("x.d/y.obj")).unwrap(), b"3");
    assert_eq!(std::fs::read(root.join("x.obj.d/z.obj")).unwrap(), b"4");
    assert_eq!(
        store.list("").unwrap(),
        ["ds", "ds/0", "x.d", "x.obj", "x.obj/z", "x/y"]
    );
    assert_eq!(
        store.object_name("ds/0"),
        root.join("ds.d/0.obj").display().to_string()
    );
    // Anything else in the directory is not an object.
    std::fs::write(root.join("README"), b"not an object").unwrap();
    std::fs::write(root.join(".abc123.tmp"), b"a half-written object").unwrap();
    std::fs::create_dir(root.join("plain")).unwrap();
    std::fs::write(root.join("plain/p.obj"), b"?").unwrap();
    assert_eq!(store.list("").unwrap().len(), 6);
    // A missing directory is an error when opened, created by `create`.
    let err = DirectoryObjects::open(root.join("none")).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err}");
    let err = DirectoryObjects::open(root.join("README")).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    // Deleting the last object below a prefix removes its directory, not the root's.
    store.delete("ds/0").unwrap();
    assert!(!root.join("ds.d").exists());
    assert!(root.join("ds.obj").exists());
}

#[test]
fn unfinished_puts_of_a_directory_store_are_removed_and_objects_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirectoryObjects::create(dir.path()).unwrap();
    store.put("ds/0", b"page".to_vec()).unwrap();
    store.put("ds/sub/1", b"deeper".to_vec()).unwrap();
    let root = dir.path();
    std::fs::write(root.join("ds.d/.0.obj.0123456789ab.tmp"), b"killed").unwrap();
    std::fs::write(root.join(".ds.obj.0123456789ab.tmp"), b"the anchor's").unwrap();
    std::fs::write(root.join("ds.d/keep.tmp"), b"not ours").unwrap();
    std::fs::write(root.join(".ds2.obj.0123456789ab.tmp"), b"another dataset's").unwrap();
    std::fs::create_dir(root.join("ds.d/.dir.tmp")).unwrap();
    assert_eq!(store.remove_unfinished("ds/").unwrap(), 2);
    assert!(!root.join("ds.d/.0.obj.0123456789ab.tmp").exists());
    assert!(!root.join(".ds.obj.0123456789ab.tmp").exists());
    for kept in [
        "ds.d/keep.tmp",
        ".ds2.obj.0123456789ab.tmp",
        "ds.d/.dir.tmp",
        "ds.d/0.obj",
    ] {
        assert!(root.join(kept).exists(), "{kept}");
    }
    assert_eq!(store.list("ds/").unwrap(), ["ds/0", "ds/sub/1"]);
    assert_eq!(store.remove_unfinished("none/").unwrap(), 0);
    assert_eq!(
        MemoryObjects::default().remove_unfinished("ds/").unwrap(),
        0
    );
}

#[test]
fn directory_writes_are_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(DirectoryObjects::create(dir.path()).unwrap().durable(true));
    let small = bytes(10, 1);
    let large = bytes(4 << 20, 2);
    store.put("obj", small.clone()).unwrap();
    // A reader that reads while a writer replaces the object back and forth sees one
    // of the two versions whole, every time.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (store, stop) = (store.clone(), stop.clone());
        let (small, large) = (small.clone(), large.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) || n < 4 {
                let next = if n % 2 == 0 { &large } else { &small };
                store.put("obj", next.clone()).unwrap();
                n += 1;
            }
        })
    };
    let mut seen = (0, 0);
    for _ in 0..200 {
        let got = store.get("obj", None).unwrap();
        if got == small {
            seen.0 += 1;
        } else {
            assert!(got == large, "a mix: {} bytes", got.len());
            seen.1 += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(seen.0 + seen.1 == 200);
    // No temporary file is left.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["obj.obj"]);
}

#[test]
fn a_failed_directory_write_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirectoryObjects::create(dir.path()).unwrap();
    // The object's directory is a file: the put fails, naming the object.
    std::fs::write(dir.path().join("ds.d"), b"in the way").unwrap();
    let err = store.put("ds/0", vec![1]).unwrap_err();
    assert!(matches!(err, Error::Write { .. }), "{err}");
    assert!(err.to_string().contains("ds.d/0.obj"), "{err}");
    // An object whose file cannot replace what is there (a directory): no temporary
    // file stays.
    std::fs::create_dir(dir.path().join("a.obj")).unwrap();
    std::fs::write(dir.path().join("a.obj/keep"), b"x").unwrap();
    let err = store.put("a", vec![1]).unwrap_err();
    assert!(err.to_string().contains("a.obj"), "{err}");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.obj", "ds.d"]);
}

/// A store that holds its objects in memory, takes its time, counts the puts in flight,
/// and fails the puts of chosen keys (or panics).
#[derive(Debug)]
struct Flaky {
    inner: MemoryObjects,
    delay: Duration,
    fail: Vec<String>,
    panic_on: Option<String>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    puts: Mutex<Vec<String>>,
}

impl Flaky {
    fn new(delay: Duration, fail: &[&str]) -> Flaky {
        Flaky {
            inner: MemoryObjects::new("flaky://store"),
            delay,
            fail: fail.iter().map(|k| k.to_string()).collect(),
            panic_on: None,
            in_flight: AtomicUsize::new(0),
            most_in_flight: AtomicUsize::new(0),
            puts: Mutex::new(Vec::new()),
        }
    }
}

impl ObjectStorage for Flaky {
    fn name(&self) -> &str {
        "flaky://store"
    }
    fn object_name(&self, key: &str) -> String {
        format!("flaky://store/{key}")
    }
    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
        self.puts.lock().unwrap().push(key.to_string());
        std::thread::sleep(self.delay);
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        if self.panic_on.as_deref() == Some(key) {
            panic!("flaky store panics on {key}");
        }
        if self.fail.iter().any(|k| k == key) {
            // Not naming the object: the uploader adds it.
            return Err(Error::remote(
                RemoteKind::PermissionDenied,
                "flaky://store",
                format!("refused {key}"),
            ));
        }
        self.inner.put(key, bytes)
    }
    fn get(&self, key: &str, range: Option<ByteRange>) -> Result<Vec<u8>> {
        self.inner.get(key, range)
    }
    fn size_of(&self, key: &str) -> Result<Option<u64>> {
        self.inner.size_of(key)
    }
    fn delete(&self, key: &str) -> Result<()> {
        self.inner.delete(key)
    }
    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        self.inner.list(prefix)
    }
    fn metrics(&self) -> IoMetricsSnapshot {
        self.inner.metrics()
    }
}

use crate::error::RemoteKind;

#[test]
fn the_uploader_stores_everything_with_bounded_puts_in_flight() {
    let flaky = Arc::new(Flaky::new(Duration::from_millis(2), &[]));
    let options = UploaderOptions {
        max_in_flight: 4,
        ..UploaderOptions::default()
    };
    let uploader = ObjectUploader::with_options(flaky.clone(), options);
    let keys: Vec<String> = (0..200).map(|i| format!("ds/{i}")).collect();
    // From several threads at once.
    std::thread::scope(|scope| {
        for chunk in keys.chunks(50) {
            let uploader = &uploader;
            scope.spawn(move || {
                for key in chunk {
                    uploader.put(key.clone(), key.as_bytes().to_vec()).unwrap();
                }
            });
        }
    });
    uploader.finish().unwrap();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(uploader.keys_written(), sorted);
    assert_eq!(uploader.keys_attempted(), sorted);
    for key in &keys {
        assert_eq!(flaky.get(key, None).unwrap(), key.as_bytes());
    }
    let most = flaky.most_in_flight.load(Ordering::SeqCst);
    assert!((2..=4).contains(&most), "{most} puts in flight");
    assert_eq!(uploader.pending_bytes(), 0);
    // Finished: no more puts; finishing again is fine.
    let err = uploader.put("late", vec![1]).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    uploader.finish().unwrap();
}

#[test]
fn the_uploader_waits_for_room_by_bytes() {
    let flaky = Arc::new(Flaky::new(Duration::from_millis(20), &[]));
    let options = UploaderOptions {
        max_in_flight: 8,
        max_pending_bytes: 100,
    };
    let uploader = ObjectUploader::with_options(flaky.clone(), options);
    // 60 bytes each: never two at once; one larger than the bound still goes.
    for i in 0..4 {
        uploader.put(format!("k{i}"), vec![0; 60]).unwrap();
        assert!(uploader.pending_bytes() <= 100);
    }
    uploader.put("big", vec![0; 1000]).unwrap();
    uploader.finish().unwrap();
    assert_eq!(flaky.most_in_flight.load(Ordering::SeqCst), 1);
    assert_eq!(uploader.keys_written().len(), 5);
}

#[test]
fn the_uploader_reports_the_first_error_and_what_it_stored() {
    let flaky = Arc::new(Flaky::new(Duration::from_millis(5), &["ds/3", "ds/4"]));
    let uploader = ObjectUploader::with_options(
        flaky.clone(),
        UploaderOptions {
            max_in_flight: 2,
            ..UploaderOptions::default()
        },
    );
    let mut refused = None;
    for i in 0..100 {
        if let Err(e) = uploader.put(format!("ds/{i}"), vec![i as u8]) {
            refused = Some((i, e));
            break;
        }
    }
    // Puts after the failure fail at once, with its error.
    let (at, err) = refused.expect("a put after the failure fails");
    assert!(at > 3, "{at}");
    // The failure known then (ds/4's may come before ds/3's, both in flight).
    let message = err.to_string();
    assert!(message.contains("refused ds/"), "{message}");
    let err = uploader.finish().unwrap_err();
    assert_eq!(err.remote_kind(), Some(RemoteKind::PermissionDenied));
    let message = err.to_string();
    assert!(message.contains("flaky://store/ds/3"), "{message}");
    assert!(message.contains("refused ds/3"), "{message}");
    // Every object written is listed, and is there; those attempted include the failed.
    let written = uploader.keys_written();
    assert!(written.contains(&"ds/0".to_string()), "{written:?}");
    assert!(!written.contains(&"ds/3".to_string()), "{written:?}");
    assert_eq!(flaky.inner.list("").unwrap(), written);
    let attempted = uploader.keys_attempted();
    assert!(attempted.contains(&"ds/3".to_string()), "{attempted:?}");
    // Nothing was stored long after the failure: the queue was dropped.
    assert!(written.len() < 10, "{written:?}");
    // A failed write deletes what it stored.
    for key in attempted {
        flaky.delete(&key).unwrap();
    }
    assert!(flaky.inner.is_empty());
    // The error stays for later calls.
    assert!(uploader.finish().is_err());
}

#[test]
fn a_panicking_store_is_an_error_not_a_hang() {
    let mut flaky = Flaky::new(Duration::ZERO, &[]);
    flaky.panic_on = Some("bad".into());
    let uploader = ObjectUploader::new(Arc::new(flaky));
    uploader.put("good", vec![1]).unwrap();
    uploader.put("bad", vec![2]).unwrap_or(());
    let err = uploader.finish().unwrap_err();
    assert!(err.to_string().contains("flaky://store/bad"), "{err}");
    assert!(err.to_string().contains("panicked"), "{err}");
}

#[test]
fn dropping_an_unfinished_uploader_stops_cleanly() {
    let flaky = Arc::new(Flaky::new(Duration::from_millis(10), &[]));
    let uploader = ObjectUploader::with_options(
        flaky.clone(),
        UploaderOptions {
            max_in_flight: 2,
            ..UploaderOptions::default()
        },
    );
    for i in 0..10 {
        uploader.put(format!("k{i}"), vec![1]).unwrap();
    }
    let start = std::time::Instant::now();
    drop(uploader);
    assert!(start.elapsed() < Duration::from_secs(5));
    // The puts in flight ended; the queued ones were dropped.
    assert_eq!(flaky.in_flight.load(Ordering::SeqCst), 0);
    assert!(flaky.puts.lock().unwrap().len() <= 10);
    // An uploader never used drops at once too.
    drop(ObjectUploader::new(Arc::new(MemoryObjects::default())));
}

#[test]
fn the_uploader_checks_keys_at_once() {
    let uploader = ObjectUploader::new(Arc::new(MemoryObjects::default()));
    let err = uploader.put("a//b", vec![]).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    uploader.finish().unwrap();
}

#[test]
fn the_uploader_stores_into_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ObjectStorage> = Arc::new(DirectoryObjects::create(dir.path()).unwrap());
    let uploader = ObjectUploader::new(store.clone());
    uploader.put("ds", b"anchor".to_vec()).unwrap();
    for i in 0..64 {
        uploader
            .put(format!("ds/{i}"), bytes(1000 + i, i as u8))
            .unwrap();
    }
    uploader.finish().unwrap();
    assert_eq!(store.list("ds").unwrap().len(), 65);
    assert_eq!(store.get("ds/63", None).unwrap(), bytes(1063, 63));
}
