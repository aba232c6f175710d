//! RNTuples stored as objects in ROOT's S3 layout, in memory and in a directory
//! (`ntpl+file://`): every conformance case copied file -> objects -> file reads back
//! to the values of the original; object locators and numbering as ROOT's sink writes
//! them; a failed or abandoned write leaves no anchor and no objects; an existing
//! dataset is kept unless replaced; a missing or corrupt object is an error naming it.
//! (The same on a real S3 server, and ROOT 6.40 reading our objects, are in the Python
//! tests: tests/test_object_layout.py.)

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::objects::Refusing;

use rntuple::format::{pack_envelope, EnvelopeType, Footer, LocatorKind, S3Anchor};
use rntuple::read::RNTupleReader;
use rntuple::write::ObjectSink;
use rntuple::{Error, Result};
use rntuple_io::objects::{MemoryObjects, ObjectStorage};
use rntuple_io::ObjectDataset;
use std::sync::Arc;

fn memory_dataset(key: &str) -> (Arc<MemoryObjects>, ObjectDataset) {
    let store = Arc::new(MemoryObjects::new("memory"));
    let dataset = ObjectDataset::new(store.clone(), key, format!("memory/{key}"));
    (store, dataset)
}

fn copy_to(file: &str, dataset: ObjectDataset) -> Result<()> {
    common::copy_to_dataset(file, dataset, false)
}

/// The anchor of the dataset `key` in `store`, and its footer.
fn anchor_and_footer(store: &MemoryObjects, key: &str) -> (S3Anchor, Footer) {
    let anchor = S3Anchor::parse(&store.object(key).unwrap(), "anchor").unwrap();
    let footer_bytes = store
        .object(&format!("{key}/{}", anchor.footer_obj_id))
        .unwrap();
    assert_eq!(footer_bytes.len() as u64, anchor.nbytes_footer);
    let footer = common::footer_of(&footer_bytes, anchor.len_footer);
    (anchor, footer)
}

#[test]
fn every_conformance_case_round_trips_through_a_directory_of_objects() {
    let dir = common::scratch_dir("object_layout", "conformance");
    let (mut cases, mut refused) = (0, 0);
    for file in common::conformance_files() {
        let path = file.to_str().unwrap().to_string();
        let case = file.file_stem().unwrap().to_str().unwrap();
        let url = format!("ntpl+file://{}/{case}", dir.display());
        let dataset = ObjectDataset::open(&url, &Default::default(), true).unwrap();
        let original = match RNTupleReader::open_path(&path, None) {
            Ok(reader) => reader,
            Err(e) => {
                // structure.feature_flag: a feature no reader knows (ROOT refuses it too);
                // the copy refuses it the same way, and stores nothing.
                assert!(
                    matches!(e.root_cause(), Error::UnsupportedFeature(_)),
                    "{case}: {e}"
                );
                let err = copy_to(&path, dataset).expect_err(case);
                assert!(
                    matches!(err.root_cause(), Error::UnsupportedFeature(_)),
                    "{err}"
                );
                assert!(RNTupleReader::open_path(&url, None).is_err());
                refused += 1;
                continue;
            }
        };
        copy_to(&path, dataset).unwrap_or_else(|e| panic!("{case}: {e}"));
        let stored = RNTupleReader::open_path(&url, None).unwrap();
        common::assert_stored_as_objects(&stored, &original, &format!("{case}: objects"));
        // One page list at the end, as ROOT's S3 sink writes (no checkpoints: a dataset
        // without its anchor cannot be recovered).
        assert!(stored.descriptor().cluster_groups.len() <= 1, "{case}");
        // And back into a file, pages copied again.
        common::back_to_a_file(&url, &dir.join(format!("{case}.root")), &original, case);
        cases += 1;
    }
    assert_eq!((cases, refused), (50, 1));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn objects_are_numbered_as_roots_sink_numbers_them() {
    let file = common::conformance_file("types.vector.fundamental");
    let (store, dataset) = memory_dataset("data/vec");
    copy_to(file.to_str().unwrap(), dataset).unwrap();
    let (anchor, footer) = anchor_and_footer(&store, "data/vec");
    // The header is object 0, the footer the last; nothing after it.
    assert_eq!(anchor.header_obj_id, 0);
    assert_eq!(anchor.header_offset, 0);
    let keys = store.list("data/vec/").unwrap();
    assert_eq!(keys.len() as u64, anchor.footer_obj_id + 1, "{keys:?}");
    // Page lists are objects before the footer, named by object locators.
    let mut numbers = Vec::new();
    for group in &footer.cluster_groups {
        let LocatorKind::Object64 { location } = group.page_list.locator.kind else {
            panic!("{:?}", group.page_list.locator);
        };
        assert!(location > 0 && location < anchor.footer_obj_id);
        let list = store.object(&format!("data/vec/{location}")).unwrap();
        assert_eq!(list.len() as u64, group.page_list.locator.size);
        for cluster in common::page_list_of(&list, group.page_list.length).columns {
            for column in cluster {
                for page in column.pages {
                    let LocatorKind::Object64 { location: n } = page.locator.kind else {
                        panic!("{:?}", page.locator);
                    };
                    // The locator's size leaves out the page checksum.
                    let object = store.object(&format!("data/vec/{n}")).unwrap();
                    let checksum = if page.has_checksum { 8 } else { 0 };
                    assert_eq!(object.len() as u64, page.locator.size + checksum);
                    assert!(n < location, "pages before their page list");
                    numbers.push(n);
                }
            }
        }
    }
    numbers.sort_unstable();
    numbers.dedup();
    assert!(!numbers.is_empty());
}

#[test]
fn a_failed_write_leaves_no_anchor_and_no_objects() {
    let file = common::conformance_file("types.vector.fundamental");
    for ok in [0, 1, 3, 5] {
        // Puts fail after `ok` of them; the clean-up's deletes succeed.
        let store = Arc::new(Refusing::new(&MemoryObjects::new("failing"), ok, false));
        let dataset = ObjectDataset::new(store.clone(), "d", "failing/d");
        let err = copy_to(file.to_str().unwrap(), dataset).expect_err("puts fail");
        assert!(err.to_string().contains("refused to store"), "{err}");
        assert!(
            store.inner.is_empty(),
            "after {ok} puts: {:?}",
            store.list("")
        );
    }
}

#[test]
fn an_abandoned_sink_removes_its_objects() {
    let (store, dataset) = memory_dataset("d");
    let mut sink = ObjectSink::create(dataset, false).unwrap();
    use rntuple::write::BlobSink;
    sink.write_blob(b"header", 0).unwrap();
    sink.write_located(&[b"page a", b"page b"], 0).unwrap();
    drop(sink);
    assert!(store.is_empty(), "{:?}", store.list(""));
}

#[test]
fn an_existing_dataset_is_kept_unless_replaced() {
    let file = common::conformance_file("types.vector.fundamental");
    let other = common::conformance_file("types.fundamental.misc");
    let (store, dataset) = memory_dataset("d");
    copy_to(file.to_str().unwrap(), dataset.clone()).unwrap();
    let before = store.list("").unwrap();
    let err = copy_to(other.to_str().unwrap(), dataset.clone()).expect_err("exists");
    assert!(matches!(err, Error::OutputExists { .. }), "{err}");
    assert_eq!(store.list("").unwrap(), before);
    let reader = RNTupleReader::open_objects(dataset.clone(), None).unwrap();
    let original = RNTupleReader::open_path(file.to_str().unwrap(), None).unwrap();
    assert_eq!(common::all_values(&reader), common::all_values(&original));
    let old = S3Anchor::parse(&store.object("d").unwrap(), "anchor").unwrap();
    // Replaced: the new dataset's objects only, beside the old ones (after the highest
    // id), the old ones removed once the anchor was switched.
    common::copy_to_dataset(other.to_str().unwrap(), dataset.clone(), true).unwrap();
    let reader = RNTupleReader::open_objects(dataset.clone(), None).unwrap();
    let original = RNTupleReader::open_path(other.to_str().unwrap(), None).unwrap();
    assert_eq!(common::all_values(&reader), common::all_values(&original));
    let anchor = S3Anchor::parse(&store.object("d").unwrap(), "anchor").unwrap();
    assert_eq!(anchor.header_obj_id, old.footer_obj_id + 1);
    let objects = rntuple::read::dataset_objects(&dataset).unwrap();
    assert_eq!(objects.stored, objects.referenced);
    assert_eq!(objects.stored.first(), Some(&anchor.header_obj_id));
    assert_eq!(objects.stored.last(), Some(&anchor.footer_obj_id));
}

#[test]
fn no_anchor_is_no_dataset_and_a_missing_or_corrupt_object_is_named() {
    let file = common::conformance_file("types.vector.fundamental");
    let (store, dataset) = memory_dataset("d");
    let err = RNTupleReader::open_objects(dataset.clone(), None).expect_err("empty");
    assert!(err.to_string().contains("no anchor object"), "{err}");
    copy_to(file.to_str().unwrap(), dataset.clone()).unwrap();
    let anchor = S3Anchor::parse(&store.object("d").unwrap(), "anchor").unwrap();
    // A page's object (the one before the first page list is a page).
    let reader = RNTupleReader::open_objects(dataset.clone(), None).unwrap();
    let page = reader.descriptor().clusters[0]
        .columns
        .iter()
        .flat_map(|c| c.pages.iter())
        .next()
        .unwrap()
        .locator;
    let LocatorKind::Object64 { location } = page.kind else {
        panic!("{page:?}");
    };
    let key = format!("d/{location}");
    let bytes = store.object(&key).unwrap();
    // Corrupt: one byte flipped; the page checksum says so.
    let mut bad = bytes.to_vec();
    bad[0] ^= 0xff;
    store.put(&key, bad).unwrap();
    let err = reader
        .read(None, 0..reader.num_entries())
        .expect_err("corrupt page");
    assert!(
        err.to_string().contains(&format!("object {location}")),
        "{err}"
    );
    // Missing.
    store.delete(&key).unwrap();
    let err = reader
        .read(None, 0..reader.num_entries())
        .expect_err("missing page");
    assert!(err.to_string().contains(&key), "{err}");
    // A missing footer: opening names it.
    store
        .delete(&format!("d/{}", anchor.footer_obj_id))
        .unwrap();
    let err = RNTupleReader::open_objects(dataset, None).expect_err("no footer");
    assert!(
        err.to_string()
            .contains(&format!("d/{}", anchor.footer_obj_id)),
        "{err}"
    );
}

#[test]
fn a_page_of_an_unknown_locator_type_is_named_and_refused() {
    let file = common::conformance_file("types.vector.fundamental");
    let (store, dataset) = memory_dataset("d");
    copy_to(file.to_str().unwrap(), dataset.clone()).unwrap();
    let (anchor, footer) = anchor_and_footer(&store, "d");
    let link = footer.cluster_groups[0].page_list;
    let LocatorKind::Object64 { location } = link.locator.kind else {
        panic!();
    };
    let key = format!("d/{location}");
    let mut list = common::page_list_of(&store.object(&key).unwrap(), link.length);
    let page = &mut list.columns[0][0].pages[0];
    page.locator.kind = LocatorKind::Unknown {
        type_code: 0x05,
        own_size: 16,
    };
    page.locator.reserved = 0x03;
    // Stored again (uncompressed), and the footer and anchor that link it with it.
    let none = rntuple::compression::CompressionSettings::UNCOMPRESSED;
    let packed = pack_envelope(EnvelopeType::PageList, &list.write().unwrap(), none).unwrap();
    store.put(&key, packed.stored.clone()).unwrap();
    let mut footer = footer;
    footer.cluster_groups[0].page_list.locator.size = packed.stored.len() as u64;
    footer.cluster_groups[0].page_list.length = packed.length;
    let footer_packed = pack_envelope(EnvelopeType::Footer, &footer.write(), none).unwrap();
    store
        .put(
            &format!("d/{}", anchor.footer_obj_id),
            footer_packed.stored.clone(),
        )
        .unwrap();
    let anchor = S3Anchor {
        nbytes_footer: footer_packed.stored.len() as u64,
        len_footer: footer_packed.length,
        ..anchor
    };
    store.put("d", anchor.to_json().into_bytes()).unwrap();
    let reader = RNTupleReader::open_objects(dataset, None).unwrap();
    let info = rntuple::read::describe(&reader);
    assert!(
        info.contains("1 of unknown type 0x05, reserved 0x03 (their pages cannot be read)"),
        "{info}"
    );
    let err = reader
        .read(None, 0..reader.num_entries())
        .expect_err("unknown locator");
    assert!(
        err.to_string()
            .contains("locator type 0x05 (reserved 0x03)"),
        "{err}"
    );
}
