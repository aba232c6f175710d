//! Replacing a dataset of objects (ROOT's S3 layout) atomically: a writer stopped after
//! any number of store operations (every one, exhaustively) leaves the old dataset or
//! the new one whole, never neither; what it leaves over is found and removed by the
//! repair, after which the store holds exactly the objects the anchor references; a
//! repair that runs during a write makes the write fail, not the dataset; special files
//! and links in place of objects of a directory store are refused at once. (Killing the
//! command at random moments, on a directory and on SeaweedFS, is in
//! tests/test_object_replace.py.)

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::objects::Refusing;

use arrow_array::RecordBatch;
use rntuple::format::S3Anchor;
use rntuple::inspect::verify::repair_objects;
use rntuple::read::{dataset_objects, RNTupleReader};
use rntuple::Result;
use rntuple_io::objects::{MemoryObjects, ObjectStorage};
use rntuple_io::ObjectDataset;
use std::sync::{Arc, Mutex};

/// A store over `inner` whose writer "dies" after `budget` puts and deletes: every
/// later one fails and changes nothing (as for a killed process, its clean-up never
/// happens). Reads go on.
fn dying(inner: &MemoryObjects, budget: usize) -> Refusing {
    Refusing::new(inner, budget, true)
}

fn copy(file: &str, dataset: ObjectDataset, replace: bool) -> Result<()> {
    common::copy_to_dataset(file, dataset, replace)
}

fn values_of(path: &str) -> RecordBatch {
    common::all_values(&RNTupleReader::open_path(path, None).unwrap())
}

/// What the dataset reads as, if it opens and reads whole.
fn read_whole(dataset: &ObjectDataset) -> Option<RecordBatch> {
    let reader = RNTupleReader::open_objects(dataset.clone(), None).ok()?;
    reader.read(None, 0..reader.num_entries()).ok()
}

#[test]
fn a_replacement_stopped_after_any_operation_leaves_one_dataset_whole() {
    let old = common::conformance_file("types.vector.fundamental");
    let new = common::conformance_file("types.fundamental.misc");
    let (old, new) = (old.to_str().unwrap(), new.to_str().unwrap());
    let (old_values, new_values) = (values_of(old), values_of(new));
    assert_ne!(old_values, new_values);
    // How many puts and deletes a whole replacement makes.
    let total = {
        let inner = MemoryObjects::new("count");
        copy(
            old,
            ObjectDataset::new(Arc::new(inner.clone()), "d", "count/d"),
            false,
        )
        .unwrap();
        let counting = Arc::new(dying(&inner, usize::MAX));
        copy(
            new,
            ObjectDataset::new(counting.clone(), "d", "count/d"),
            true,
        )
        .unwrap();
        counting.writes()
    };
    assert!(total > 10, "{total} operations");
    let (mut kept_old, mut got_new) = (0, 0);
    for budget in 0..=total {
        let inner = MemoryObjects::new("mem");
        let whole = ObjectDataset::new(Arc::new(inner.clone()), "d", "mem/d");
        copy(old, whole.clone(), false).unwrap();
        let dying = ObjectDataset::new(Arc::new(dying(&inner, budget)), "d", "mem/d");
        // The copy succeeds exactly when its anchor was stored.
        let stored_anchor = copy(new, dying, true).is_ok();
        let values = read_whole(&whole);
        match &values {
            Some(v) if *v == old_values && !stored_anchor => kept_old += 1,
            Some(v) if *v == new_values && stored_anchor => got_new += 1,
            Some(_) => panic!("budget {budget}: values of the wrong dataset, or of neither"),
            None => panic!("budget {budget}: neither dataset reads whole"),
        }
        // What the stopped writer left over is found, and the repair removes exactly it.
        let objects = dataset_objects(&whole).unwrap();
        assert!(objects.missing().is_empty(), "budget {budget}");
        let leftovers = objects.leftovers();
        let repaired = repair_objects(&whole).unwrap();
        assert_eq!(repaired.removed, leftovers, "budget {budget}");
        let after = dataset_objects(&whole).unwrap();
        assert_eq!(after.stored, after.referenced, "budget {budget}");
        assert!(inner.list("d/").unwrap().len() == after.referenced.len());
        assert_eq!(
            read_whole(&whole),
            values,
            "budget {budget}: the repair changed the values"
        );
    }
    // The anchor is the one switch: before it the old dataset, from it on the new one.
    assert!(kept_old > 0 && got_new > 0, "old {kept_old}, new {got_new}");
    assert_eq!(kept_old + got_new, total + 1);
}

#[test]
fn a_new_writer_takes_ids_past_leftovers_and_removes_them() {
    let old = common::conformance_file("types.vector.fundamental");
    let new = common::conformance_file("types.fundamental.misc");
    let inner = MemoryObjects::new("mem");
    let dataset = ObjectDataset::new(Arc::new(inner.clone()), "d", "mem/d");
    // Leftovers of a killed first writer (no anchor), and a key that is no object id.
    inner.put("d/40", b"left".to_vec()).unwrap();
    inner.put("d/007", b"not ours".to_vec()).unwrap();
    let err = RNTupleReader::open_objects(dataset.clone(), None).expect_err("no anchor");
    assert!(
        err.to_string()
            .contains("1 object of a dataset whose writer did not finish")
            && err.to_string().contains("`rntuple verify --repair mem/d`"),
        "{err}"
    );
    copy(old.to_str().unwrap(), dataset.clone(), false).unwrap();
    let first = S3Anchor::parse(&inner.object("d").unwrap(), "anchor").unwrap();
    assert_eq!(first.header_obj_id, 41);
    assert!(
        inner.object("d/40").is_none(),
        "the next write removes leftovers"
    );
    assert!(
        inner.object("d/007").is_some(),
        "keys that are no ids are not the layout's"
    );
    copy(new.to_str().unwrap(), dataset.clone(), true).unwrap();
    let second = S3Anchor::parse(&inner.object("d").unwrap(), "anchor").unwrap();
    assert_eq!(second.header_obj_id, first.footer_obj_id + 1);
    let objects = dataset_objects(&dataset).unwrap();
    assert_eq!(objects.stored, objects.referenced);
    assert_eq!(
        read_whole(&dataset).unwrap(),
        values_of(new.to_str().unwrap())
    );
    // The note info and verify print.
    inner
        .put(&format!("d/{}", second.footer_obj_id + 5), b"x".to_vec())
        .unwrap();
    let note = dataset_objects(&dataset)
        .unwrap()
        .leftover_note("mem/d")
        .unwrap();
    assert_eq!(
        note,
        "1 object under the prefix that the anchor does not reference (left by a writer \
         that did not finish); `rntuple verify --repair mem/d` removes them"
    );
}

#[test]
fn a_repair_during_a_write_fails_the_write_and_keeps_the_dataset() {
    let old = common::conformance_file("types.vector.fundamental");
    let new = common::conformance_file("types.fundamental.misc");
    let inner = MemoryObjects::new("mem");
    let whole = ObjectDataset::new(Arc::new(inner.clone()), "d", "mem/d");
    copy(old.to_str().unwrap(), whole.clone(), false).unwrap();
    let racing = dying(&inner, usize::MAX);
    // The write lists the prefix when it starts and again before its anchor: a repair
    // runs just before the second listing, when the new objects are all stored.
    let repaired = Arc::new(Mutex::new(None));
    {
        let (whole, repaired) = (whole.clone(), repaired.clone());
        *racing.on_second_list.lock().unwrap() = Some(Box::new(move || {
            *repaired.lock().unwrap() = Some(repair_objects(&whole).unwrap());
        }));
    }
    let dataset = ObjectDataset::new(Arc::new(racing), "d", "mem/d");
    let err = copy(new.to_str().unwrap(), dataset, true).expect_err("objects removed");
    assert!(
        err.to_string()
            .contains("objects this write stored were removed before its anchor"),
        "{err}"
    );
    assert!(!repaired
        .lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .removed
        .is_empty());
    assert_eq!(
        read_whole(&whole).unwrap(),
        values_of(old.to_str().unwrap())
    );
    let objects = dataset_objects(&whole).unwrap();
    assert_eq!(objects.stored, objects.referenced);
}

/// Runs `f` on a thread; panics if it has not returned within a minute (a hang).
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what}: no answer within a minute (blocked?)"))
}

#[test]
fn special_files_and_links_in_place_of_objects_are_refused_at_once() {
    let file = common::conformance_file("types.vector.fundamental");
    let dir = common::scratch_dir("object_replace", "special");
    let outside = dir.join("outside.root");
    std::fs::copy(&file, &outside).unwrap();
    let url = format!("ntpl+file://{}/store/ds", dir.display());
    let dataset = ObjectDataset::open(&url, &Default::default(), true).unwrap();
    copy(file.to_str().unwrap(), dataset.clone(), false).unwrap();
    let objects = dir.join("store/ds.d");
    let anchor = S3Anchor::parse(&std::fs::read(dir.join("store/ds.obj")).unwrap(), "a").unwrap();
    let header = objects.join(format!("{}.obj", anchor.header_obj_id));
    let saved = std::fs::read(&header).unwrap();
    let kinds = ["a FIFO (named pipe)", "a socket", "a symbolic link"];
    for said in kinds {
        std::fs::remove_file(&header).unwrap();
        match said {
            "a FIFO (named pipe)" => {
                let made = std::process::Command::new("mkfifo").arg(&header).status();
                assert!(made.unwrap().success());
            }
            "a socket" => {
                std::mem::forget(std::os::unix::net::UnixListener::bind(&header).unwrap());
            }
            _ => std::os::unix::fs::symlink(&outside, &header).unwrap(),
        }
        let url2 = url.clone();
        let err = bounded(said, move || {
            RNTupleReader::open_path(&url2, None)
                .map(|_| ())
                .expect_err(said)
                .to_string()
        });
        assert!(
            err.contains(&format!("{said} where a regular file belongs"))
                && err.contains(&header.display().to_string()),
            "{said}: {err}"
        );
        // The listing still counts the name (a repair removes it as any object), and
        // nothing outside the store changed.
        assert_eq!(
            std::fs::read(&outside).unwrap(),
            std::fs::read(&file).unwrap()
        );
    }
    std::fs::remove_file(&header).unwrap();
    std::fs::write(&header, &saved).unwrap();
    // The directory of the objects as a link to a directory elsewhere: not followed.
    let elsewhere = dir.join("elsewhere");
    std::fs::rename(&objects, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &objects).unwrap();
    let url2 = url.clone();
    let err = bounded("linked directory", move || {
        RNTupleReader::open_path(&url2, None)
            .map(|_| ())
            .expect_err("link")
            .to_string()
    });
    assert!(
        err.contains("a symbolic link where a directory belongs"),
        "{err}"
    );
    // A replacement does not write through it either (its objects go nowhere).
    let before: Vec<_> = std::fs::read_dir(&elsewhere)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let err = copy(file.to_str().unwrap(), dataset, true).expect_err("link");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    let after: Vec<_> = std::fs::read_dir(&elsewhere)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(before.len(), after.len());
    let _ = std::fs::remove_dir_all(&dir);
}
