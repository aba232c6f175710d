//! RNTuples in ROOT's DAOS layout, in a directory store (`DirectoryDaos`, the store of
//! `daos://` URIs under `$RNTUPLE_DAOS_DIR`) and in memory (`MemoryDaos`), with both
//! page mappings (ROOT 6.40's object per cluster, ROOT main's object per page): every
//! conformance case copied file -> DAOS -> file reads back to the values of the
//! original; the keys written are exactly ROOT's; the anchor decodes to the envelopes'
//! sizes; containers of either mapping read; two RNTuples share a container; a missing
//! anchor, envelope or page is an error naming its key; a failed write leaves no anchor;
//! an existing RNTuple is kept unless replaced.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use rntuple::format::{
    ntuple_index, DaosAnchor, DaosLocation, DaosPageMapping, EnvelopeType, LocatorKind,
    DAOS_AKEY_PAGE, DAOS_ANCHOR_SIZE,
};
use rntuple::merge::{merge_into, merge_to_daos, MergeOptions};
use rntuple::read::RNTupleReader;
use rntuple::write::{DaosSink, DaosSinkOptions};
use rntuple::{Error, Result};
use rntuple_io::{
    DaosContainer, DaosContainerId, DaosKey, DaosOid, DaosStore, DirectoryDaos, Fetched, MemoryDaos,
};
use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};

const MAPPINGS: [DaosPageMapping; 2] = [
    DaosPageMapping::ObjectPerPage,
    DaosPageMapping::ObjectPerCluster,
];

/// The directory `daos://` URIs are opened in (`RNTUPLE_DAOS_DIR`), set once for the
/// whole test binary (every test that sets it sets this value).
fn daos_dir() -> PathBuf {
    static SET: Once = Once::new();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("daos_layout-{}", std::process::id()));
    SET.call_once(|| {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::env::set_var(rntuple_io::DAOS_DIR_VARIABLE, &dir);
    });
    dir
}

fn memory_container(label: &str) -> (MemoryDaos, DaosContainer) {
    let store = MemoryDaos::new();
    let id = DaosContainerId::new("pool", label);
    let container = DaosContainer::create(Arc::new(store.clone()), id).unwrap();
    (store, container)
}

fn copy(
    file: &str,
    container: &DaosContainer,
    name: Option<&str>,
    mapping: DaosPageMapping,
    replace: bool,
) -> Result<()> {
    merge_to_daos(
        &[file.to_string()],
        container.clone(),
        name,
        mapping,
        &MergeOptions::default(),
        replace,
        |_| {},
    )
    .map(|_| ())
}

fn key(name: &str, at: DaosLocation) -> DaosKey {
    DaosKey::new(
        DaosOid::new(at.oid_lo, u64::from(ntuple_index(name))),
        at.dkey,
        at.akey,
    )
}

fn fetch(container: &DaosContainer, key: DaosKey) -> Option<Vec<u8>> {
    container.fetch(key.oid, key.dkey, key.akey).unwrap()
}

#[test]
fn every_conformance_case_round_trips_in_both_mappings_and_stores() {
    let root = daos_dir();
    let files = common::scratch_dir("daos_layout-files", "conformance");
    let directory: Arc<dyn DaosStore> = Arc::new(DirectoryDaos::new(&root));
    let (mut cases, mut refused) = (0, 0);
    for file in common::conformance_files() {
        let path = file.to_str().unwrap().to_string();
        let case = file.file_stem().unwrap().to_str().unwrap();
        let original = RNTupleReader::open_path(&path, None).ok();
        for mapping in MAPPINGS {
            let label = format!("{case}.{}", mapping.name());
            let in_directory =
                DaosContainer::create(directory.clone(), DaosContainerId::new("conf", &label))
                    .unwrap();
            let (memory, in_memory) = memory_container(&label);
            let Some(original) = &original else {
                // structure.feature_flag: a feature no reader knows (ROOT refuses it
                // too); the copy refuses it the same way, and writes nothing.
                for container in [&in_directory, &in_memory] {
                    let err = copy(&path, container, Some("ntpl"), mapping, false).expect_err(case);
                    assert!(
                        matches!(err.root_cause(), Error::UnsupportedFeature(_)),
                        "{case}: {err}"
                    );
                    assert!(RNTupleReader::open_daos(container.clone(), "ntpl").is_err());
                }
                assert!(memory.keys(in_memory.id()).is_empty());
                refused += 1;
                continue;
            };
            let name = original.descriptor().name.clone();
            for container in [&in_directory, &in_memory] {
                copy(&path, container, None, mapping, false)
                    .unwrap_or_else(|e| panic!("{case} ({}): {e}", mapping.name()));
                let stored = RNTupleReader::open_daos(container.clone(), &name)
                    .unwrap_or_else(|e| panic!("{case} ({}): {e}", mapping.name()));
                let what = format!("{case}: {}", mapping.name());
                common::assert_stored_as_objects(&stored, original, &what);
            }
            // Both stores hold the same values under the same keys.
            let mut on_disk = BTreeSet::new();
            for key in memory.keys(in_memory.id()) {
                assert_eq!(
                    fetch(&in_directory, key),
                    fetch(&in_memory, key),
                    "{case}: {key}"
                );
                on_disk.insert(key);
            }
            // And back into a file through the URI, pages copied again.
            let uri = format!("daos://conf/{label}:{name}");
            let back = files.join(format!("{label}.root"));
            common::back_to_a_file(&uri, &back, original, case);
            let by_uri =
                RNTupleReader::open_path(&format!("daos://conf/{label}"), Some(&name)).unwrap();
            assert_eq!(
                common::all_values(&by_uri),
                common::all_values(original),
                "{case}: by URI"
            );
        }
        if original.is_some() {
            cases += 1;
        }
    }
    assert_eq!((cases, refused), (50, 2));
    let _ = std::fs::remove_dir_all(&files);
}

/// The keys ROOT's sink writes for the RNTuple `name` of `container`, read from its
/// footer and page lists (and checked against the anchor on the way).
fn expected_keys(
    container: &DaosContainer,
    name: &str,
    mapping: DaosPageMapping,
) -> BTreeSet<DaosKey> {
    let anchor_bytes = fetch(container, key(name, DaosLocation::ANCHOR)).unwrap();
    assert_eq!(anchor_bytes.len(), DAOS_ANCHOR_SIZE);
    let anchor = DaosAnchor::parse(&anchor_bytes, "anchor").unwrap();
    assert_eq!(anchor.version_epoch, 1);
    assert_eq!(anchor.object_class, "SX");
    let header = fetch(container, key(name, DaosLocation::HEADER)).unwrap();
    assert_eq!(header.len() as u64, u64::from(anchor.nbytes_header));
    common::envelope_payload(
        &header,
        u64::from(anchor.len_header),
        EnvelopeType::Header,
        "header",
    );
    let footer_bytes = fetch(container, key(name, DaosLocation::FOOTER)).unwrap();
    assert_eq!(footer_bytes.len() as u64, u64::from(anchor.nbytes_footer));
    let footer = common::footer_of(&footer_bytes, u64::from(anchor.len_footer));
    let mut keys: BTreeSet<DaosKey> = [
        DaosLocation::ANCHOR,
        DaosLocation::HEADER,
        DaosLocation::FOOTER,
    ]
    .into_iter()
    .map(|at| key(name, at))
    .collect();
    let mut cluster = 0u64;
    let mut ids = BTreeSet::new();
    for (g, group) in footer.cluster_groups.iter().enumerate() {
        // Page-list links: Object64, location = the cluster group, size = the value's.
        let LocatorKind::Object64 { location } = group.page_list.locator.kind else {
            panic!("{:?}", group.page_list.locator);
        };
        assert_eq!(location, g as u64);
        let list_key = key(name, DaosLocation::page_list(location));
        keys.insert(list_key);
        let list_bytes = fetch(container, list_key).unwrap();
        assert_eq!(list_bytes.len() as u64, group.page_list.locator.size);
        let list = common::page_list_of(&list_bytes, group.page_list.length);
        for columns in list.columns {
            for (column, pages) in columns.iter().enumerate() {
                for page in &pages.pages {
                    let LocatorKind::Object64 { location: id } = page.locator.kind else {
                        panic!("{:?}", page.locator);
                    };
                    // A page several columns list has one id: stored once under ROOT
                    // main's mapping, under each column under ROOT 6.40's.
                    let first = ids.insert(id);
                    if !first && mapping == DaosPageMapping::ObjectPerPage {
                        continue;
                    }
                    let at = mapping.page_location(cluster, column as u64, id);
                    let page_key = key(name, at);
                    // The locator's size leaves out the page checksum.
                    let value = fetch(container, page_key).unwrap();
                    let checksum = if page.has_checksum { 8 } else { 0 };
                    assert_eq!(value.len() as u64, page.locator.size + checksum);
                    keys.insert(page_key);
                }
            }
            cluster += 1;
        }
    }
    // Page ids count the pages from 0, without gaps.
    assert_eq!(ids, (0..ids.len() as u64).collect::<BTreeSet<_>>());
    keys
}

#[test]
fn the_keys_written_are_roots() {
    for case in [
        "types.vector.fundamental",
        "structure.cluster_groups",
        "structure.clusters",
        "structure.empty",
        // Pages shared by several columns (ROOT's same-page merging).
        "types.optional",
    ] {
        let file = common::conformance_file(case);
        let name = RNTupleReader::open_path(file.to_str().unwrap(), None)
            .unwrap()
            .descriptor()
            .name
            .clone();
        for mapping in MAPPINGS {
            let (store, container) = memory_container("keys");
            copy(file.to_str().unwrap(), &container, None, mapping, false).unwrap();
            let written: BTreeSet<DaosKey> = store.keys(container.id()).into_iter().collect();
            let expected = expected_keys(&container, &name, mapping);
            assert_eq!(written, expected, "{case}: {}", mapping.name());
            // Every object of the RNTuple has its ntuple index as OID.hi.
            assert!(written
                .iter()
                .all(|k| k.oid.hi == u64::from(ntuple_index(&name))));
            if case == "types.optional" {
                let stored = RNTupleReader::open_daos(container.clone(), &name).unwrap();
                let listed: Vec<_> = stored
                    .descriptor()
                    .clusters
                    .iter()
                    .flat_map(|c| c.columns.iter().flat_map(|cp| cp.pages.iter()))
                    .map(|p| p.locator.offset)
                    .collect();
                let distinct: BTreeSet<_> = listed.iter().collect();
                assert!(distinct.len() < listed.len(), "{case}: no shared page");
                let page_values = written.len() - 3 - 1;
                match mapping {
                    DaosPageMapping::ObjectPerPage => assert_eq!(page_values, distinct.len()),
                    DaosPageMapping::ObjectPerCluster => assert_eq!(page_values, listed.len()),
                }
            }
            if case == "structure.cluster_groups" {
                let lists = written
                    .iter()
                    .filter(|k| k.oid.lo == DaosLocation::page_list(0).oid_lo)
                    .count();
                assert!(lists > 1, "{case}: {lists} page lists");
            }
            // The pages under the other mapping's keys are not there.
            let per_page = written.iter().filter(|k| k.akey == DAOS_AKEY_PAGE).count();
            match mapping {
                DaosPageMapping::ObjectPerPage => assert_eq!(
                    written.len(),
                    3 + written
                        .iter()
                        .filter(|k| k.oid.lo == DaosLocation::page_list(0).oid_lo)
                        .count()
                        + per_page
                ),
                DaosPageMapping::ObjectPerCluster => assert_eq!(per_page, 0),
            }
        }
    }
}

#[test]
fn the_anchor_decodes_to_the_envelopes_sizes() {
    let file = common::conformance_file("types.fundamental.misc");
    let (_, container) = memory_container("anchor");
    copy(
        file.to_str().unwrap(),
        &container,
        Some("ntpl"),
        DaosPageMapping::ObjectPerPage,
        false,
    )
    .unwrap();
    let bytes = fetch(&container, key("ntpl", DaosLocation::ANCHOR)).unwrap();
    assert_eq!(bytes.len(), 100);
    // Version 1, then the format version 1.x.y.z, then the four 32-bit sizes.
    assert_eq!(&bytes[..10], &[1, 0, 0, 0, 0, 0, 0, 0, 1, 0]);
    let anchor = DaosAnchor::parse(&bytes, "anchor").unwrap();
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    assert_eq!(u32_at(16), anchor.nbytes_header);
    assert_eq!(u32_at(20), anchor.len_header);
    assert_eq!(u32_at(24), anchor.nbytes_footer);
    assert_eq!(u32_at(28), anchor.len_footer);
    let header = fetch(&container, key("ntpl", DaosLocation::HEADER)).unwrap();
    let footer = fetch(&container, key("ntpl", DaosLocation::FOOTER)).unwrap();
    assert_eq!(u32::try_from(header.len()).unwrap(), anchor.nbytes_header);
    assert_eq!(u32::try_from(footer.len()).unwrap(), anchor.nbytes_footer);
    assert!(anchor.len_header >= anchor.nbytes_header);
    // The class name, then zeros.
    assert_eq!(&bytes[32..38], &[2, 0, 0, 0, b'S', b'X']);
    assert!(bytes[38..].iter().all(|&b| b == 0));
}

#[test]
fn containers_of_either_mapping_read_and_two_rntuples_share_one() {
    let a = common::conformance_file("types.vector.fundamental");
    let b = common::conformance_file("types.string");
    let (store, container) = memory_container("shared");
    // ROOT 6.40's mapping for one, ROOT main's for the other, in one container.
    copy(
        a.to_str().unwrap(),
        &container,
        Some("a"),
        DaosPageMapping::ObjectPerCluster,
        false,
    )
    .unwrap();
    copy(
        b.to_str().unwrap(),
        &container,
        Some("b"),
        DaosPageMapping::ObjectPerPage,
        false,
    )
    .unwrap();
    let his: BTreeSet<u64> = store
        .keys(container.id())
        .iter()
        .map(|k| k.oid.hi)
        .collect();
    assert_eq!(
        his,
        [ntuple_index("a"), ntuple_index("b")]
            .map(u64::from)
            .into_iter()
            .collect()
    );
    for (file, name) in [(&a, "a"), (&b, "b")] {
        let original = RNTupleReader::open_path(file.to_str().unwrap(), None).unwrap();
        let stored = RNTupleReader::open_daos(container.clone(), name).unwrap();
        assert_eq!(stored.path(), name);
        assert_eq!(
            common::all_values(&stored),
            common::all_values(&original),
            "{name}"
        );
    }
    // One sink, two RNTuples one after the other (as into a file).
    let (store2, container2) = memory_container("one-sink");
    let mut sink = DaosSink::new(container2.clone(), DaosSinkOptions::default());
    for (file, name) in [(&a, "first"), (&b, "second")] {
        let options = MergeOptions {
            name: Some(name.to_string()),
            ..Default::default()
        };
        merge_into(
            &[file.to_str().unwrap().to_string()],
            &mut sink,
            &options,
            |_| {},
        )
        .unwrap();
    }
    let names: Vec<&str> = sink.summaries().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["first", "second"]);
    assert_eq!(sink.summaries()[1].values, {
        store2
            .keys(container2.id())
            .iter()
            .filter(|k| k.oid.hi == u64::from(ntuple_index("second")))
            .count() as u64
    });
    for (file, name) in [(&a, "first"), (&b, "second")] {
        let original = RNTupleReader::open_path(file.to_str().unwrap(), None).unwrap();
        let stored = RNTupleReader::open_daos(container2.clone(), name).unwrap();
        assert_eq!(
            common::all_values(&stored),
            common::all_values(&original),
            "{name}"
        );
    }
}

#[test]
fn a_name_colliding_with_anothers_index_is_refused() {
    let file = common::conformance_file("types.vector.fundamental");
    let (store, container) = memory_container("collision");
    copy(
        file.to_str().unwrap(),
        &container,
        Some("a"),
        DaosPageMapping::ObjectPerPage,
        false,
    )
    .unwrap();
    // The values of "a" under the index of "b": as if both names hashed alike.
    let b = u64::from(ntuple_index("b"));
    for k in store.keys(container.id()) {
        let value = fetch(&container, k).unwrap();
        container
            .update(DaosOid::new(k.oid.lo, b), k.dkey, k.akey, &value)
            .unwrap();
    }
    let err = RNTupleReader::open_daos(container.clone(), "b").expect_err("collision");
    assert!(matches!(err, Error::NotFound(_)), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("is \"a\"") && text.contains("daos://pool/collision"),
        "{text}"
    );
    // Nor is "b" written over "a"'s values, even when replacing.
    let err = copy(
        file.to_str().unwrap(),
        &container,
        Some("b"),
        DaosPageMapping::ObjectPerPage,
        true,
    )
    .expect_err("index taken");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(
        err.to_string().contains("taken by the RNTuple \"a\""),
        "{err}"
    );
}

/// A store hiding some keys (as if never written), and failing updates after `ok`
/// values.
#[derive(Debug)]
struct Faulty {
    inner: MemoryDaos,
    hidden: Mutex<HashSet<DaosKey>>,
    ok: usize,
    updates: AtomicUsize,
}

impl Faulty {
    fn new(inner: MemoryDaos, ok: usize) -> Faulty {
        Faulty {
            inner,
            hidden: Mutex::new(HashSet::new()),
            ok,
            updates: AtomicUsize::new(0),
        }
    }
}

impl DaosStore for Faulty {
    fn create_container(&self, container: &DaosContainerId) -> rntuple_io::Result<()> {
        self.inner.create_container(container)
    }
    fn has_container(&self, container: &DaosContainerId) -> rntuple_io::Result<bool> {
        self.inner.has_container(container)
    }
    fn fetch_many(&self, container: &DaosContainerId, keys: &[DaosKey]) -> Fetched {
        let hidden = self.hidden.lock().unwrap();
        let mut values = self.inner.fetch_many(container, keys)?;
        for (key, value) in keys.iter().zip(values.iter_mut()) {
            if hidden.contains(key) {
                *value = None;
            }
        }
        Ok(values)
    }
    fn update_many(
        &self,
        container: &DaosContainerId,
        values: &[(DaosKey, &[u8])],
    ) -> rntuple_io::Result<()> {
        // One value at a time: the first `ok` values are stored, the next refused.
        for (key, value) in values {
            if self.updates.fetch_add(1, Ordering::SeqCst) >= self.ok {
                return Err(rntuple_io::Error::InvalidArgument(format!(
                    "refused to update object {}",
                    key.oid
                )));
            }
            self.inner.update_many(container, &[(*key, value)])?;
        }
        Ok(())
    }
    fn update_together(
        &self,
        container: &DaosContainerId,
        oid: DaosOid,
        dkey: u64,
        values: &[(u64, &[u8])],
    ) -> rntuple_io::Result<()> {
        // All or none, as the store's own.
        let before = self.updates.fetch_add(values.len(), Ordering::SeqCst);
        if before + values.len() > self.ok {
            return Err(rntuple_io::Error::InvalidArgument(format!(
                "refused to update object {oid}"
            )));
        }
        self.inner.update_together(container, oid, dkey, values)
    }
    fn punch_many(&self, container: &DaosContainerId, keys: &[DaosKey]) -> rntuple_io::Result<()> {
        self.inner.punch_many(container, keys)
    }
}

#[test]
fn a_missing_anchor_envelope_or_page_is_named() {
    let file = common::conformance_file("types.vector.fundamental");
    for mapping in MAPPINGS {
        let inner = MemoryDaos::new();
        let store = Arc::new(Faulty::new(inner.clone(), usize::MAX));
        let id = DaosContainerId::new("pool", "missing");
        let container = DaosContainer::create(store.clone(), id.clone()).unwrap();
        let err = RNTupleReader::open_daos(container.clone(), "ntpl").expect_err("empty");
        assert!(matches!(err, Error::NotFound(_)), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("daos://pool/missing")
                && text.contains("no RNTuple \"ntpl\"")
                && text.contains("no anchor")
                && text.contains("akey 0x4243544b5344422a"),
            "{text}"
        );
        copy(
            file.to_str().unwrap(),
            &container,
            Some("ntpl"),
            mapping,
            false,
        )
        .unwrap();
        let reader = RNTupleReader::open_daos(container.clone(), "ntpl").unwrap();
        // A page other than the first (which finds the mapping) goes missing.
        let pages: Vec<_> = reader
            .descriptor()
            .clusters
            .iter()
            .enumerate()
            .flat_map(|(k, c)| {
                c.columns
                    .iter()
                    .enumerate()
                    .flat_map(move |(col, cp)| cp.pages.iter().map(move |p| (k, col, *p)))
            })
            .collect();
        assert!(pages.len() > 1);
        let (cluster, _, page) = pages[pages.len() - 1];
        let LocatorKind::Object64 { location } = page.locator.kind else {
            panic!("{page:?}");
        };
        let page_key = inner
            .keys(&id)
            .into_iter()
            .find(|k| match mapping {
                DaosPageMapping::ObjectPerPage => k.oid.lo == location && k.akey == DAOS_AKEY_PAGE,
                DaosPageMapping::ObjectPerCluster => {
                    k.oid.lo == cluster as u64 && k.akey == location
                }
            })
            .unwrap();
        store.hidden.lock().unwrap().insert(page_key);
        let err = reader
            .read(None, 0..reader.num_entries())
            .expect_err("missing page");
        let text = err.to_string();
        assert!(
            text.contains(&page_key.to_string()) && text.contains("daos://pool/missing"),
            "{}: {text}",
            mapping.name()
        );
        // The first page missing: the mapping cannot be found; both keys are named.
        let first = pages[0].2;
        let LocatorKind::Object64 { location: first_id } = first.locator.kind else {
            panic!();
        };
        let first_keys: Vec<DaosKey> = MAPPINGS
            .iter()
            .map(|m| key("ntpl", m.page_location(0, pages[0].1 as u64, first_id)))
            .collect();
        store.hidden.lock().unwrap().extend(first_keys.iter());
        let err = RNTupleReader::open_daos(container.clone(), "ntpl").expect_err("no first page");
        assert!(matches!(err, Error::NotFound(_)), "{err}");
        for k in &first_keys {
            assert!(err.to_string().contains(&k.to_string()), "{err}");
        }
        // A missing footer: opening names it.
        let footer_key = key("ntpl", DaosLocation::FOOTER);
        store.hidden.lock().unwrap().insert(footer_key);
        let err = RNTupleReader::open_daos(container.clone(), "ntpl").expect_err("no footer");
        let text = err.to_string();
        assert!(
            text.contains("footer envelope") && text.contains(&footer_key.to_string()),
            "{text}"
        );
    }
}

#[test]
fn a_failed_write_leaves_no_anchor() {
    let file = common::conformance_file("types.vector.fundamental");
    let anchor_key = key("ntpl", DaosLocation::ANCHOR);
    for mapping in MAPPINGS {
        for ok in [0, 1, 3, 10] {
            let inner = MemoryDaos::new();
            let store = Arc::new(Faulty::new(inner.clone(), ok));
            let id = DaosContainerId::new("pool", "failing");
            let container = DaosContainer::create(store, id.clone()).unwrap();
            let err = copy(
                file.to_str().unwrap(),
                &container,
                Some("ntpl"),
                mapping,
                false,
            )
            .expect_err("updates fail");
            assert!(err.to_string().contains("refused to update"), "{err}");
            assert!(
                !inner.keys(&id).contains(&anchor_key),
                "after {ok} values: {:?}",
                inner.keys(&id)
            );
            let err = RNTupleReader::open_daos(container, "ntpl").expect_err("no anchor");
            assert!(matches!(err, Error::NotFound(_)), "{err}");
        }
    }
    // A replacement stopped after any number of updates (every one: a writer killed at
    // any moment) leaves the old RNTuple whole, or from the switch of header, footer
    // and anchor (together) on, the new one; never neither, in all four pairs of
    // mappings.
    let other = common::conformance_file("types.string");
    let values = |path: &std::path::Path| {
        common::all_values(&RNTupleReader::open_path(path.to_str().unwrap(), None).unwrap())
    };
    let (old_values, new_values) = (values(&file), values(&other));
    for old_mapping in MAPPINGS {
        for new_mapping in MAPPINGS {
            let replace = |ok: usize| {
                let inner = MemoryDaos::new();
                let id = DaosContainerId::new("pool", "replacing");
                let good = DaosContainer::create(Arc::new(inner.clone()), id.clone()).unwrap();
                copy(
                    file.to_str().unwrap(),
                    &good,
                    Some("ntpl"),
                    old_mapping,
                    false,
                )
                .unwrap();
                let faulty = Arc::new(Faulty::new(inner, ok));
                let failing = DaosContainer::open(faulty.clone(), id).unwrap();
                let done = copy(
                    other.to_str().unwrap(),
                    &failing,
                    Some("ntpl"),
                    new_mapping,
                    true,
                );
                (good, done.is_ok(), faulty.updates.load(Ordering::SeqCst))
            };
            let (_, finished, total) = replace(usize::MAX);
            assert!(finished && total > 3, "{total} updates");
            for ok in 0..=total {
                let (good, switched, _) = replace(ok);
                let reader = RNTupleReader::open_daos(good, "ntpl")
                    .unwrap_or_else(|e| panic!("{old_mapping:?} -> {new_mapping:?}, {ok}: {e}"));
                let got = common::all_values(&reader);
                let want = if switched { &new_values } else { &old_values };
                assert_eq!(
                    &got, want,
                    "{old_mapping:?} -> {new_mapping:?} after {ok} updates"
                );
            }
        }
    }
}

#[test]
fn an_existing_rntuple_is_kept_unless_replaced() {
    let file = common::conformance_file("types.vector.fundamental");
    let other = common::conformance_file("types.fundamental.misc");
    let (store, container) = memory_container("existing");
    copy(
        file.to_str().unwrap(),
        &container,
        Some("n"),
        DaosPageMapping::ObjectPerPage,
        false,
    )
    .unwrap();
    let before = store.keys(container.id());
    for mapping in MAPPINGS {
        let err = copy(
            other.to_str().unwrap(),
            &container,
            Some("n"),
            mapping,
            false,
        )
        .expect_err("exists");
        assert!(matches!(err, Error::OutputExists { .. }), "{err}");
        assert!(err.to_string().contains("daos://pool/existing:n"), "{err}");
    }
    assert_eq!(store.keys(container.id()), before);
    let original = RNTupleReader::open_path(file.to_str().unwrap(), None).unwrap();
    let stored = RNTupleReader::open_daos(container.clone(), "n").unwrap();
    assert_eq!(common::all_values(&stored), common::all_values(&original));
    // Replaced, with the other mapping: the new RNTuple reads; its pages took ids after
    // the old one's, and once its anchor was in place the old pages and page lists were
    // removed: the container holds exactly the new RNTuple's values.
    let old = rntuple::read::daos_extent(&container, "n")
        .unwrap()
        .unwrap();
    copy(
        other.to_str().unwrap(),
        &container,
        Some("n"),
        DaosPageMapping::ObjectPerCluster,
        true,
    )
    .unwrap();
    let original = RNTupleReader::open_path(other.to_str().unwrap(), None).unwrap();
    let stored = RNTupleReader::open_daos(container.clone(), "n").unwrap();
    assert_eq!(common::all_values(&stored), common::all_values(&original));
    let first = stored.descriptor().clusters[0]
        .columns
        .iter()
        .flat_map(|c| c.pages.iter())
        .next()
        .unwrap();
    let LocatorKind::Object64 { location } = first.locator.kind else {
        panic!();
    };
    assert_eq!(location, old.next_page);
    let new = rntuple::read::daos_extent(&container, "n")
        .unwrap()
        .unwrap();
    let mut expected = new.keys.clone();
    for at in [
        DaosLocation::ANCHOR,
        DaosLocation::HEADER,
        DaosLocation::FOOTER,
    ] {
        expected.push(key("n", at));
    }
    expected.sort_unstable();
    assert_eq!(store.keys(container.id()), expected);
    assert!(old.keys.iter().all(|k| !expected.contains(k)));
}
