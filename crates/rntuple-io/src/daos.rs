//! DAOS key-value stores: what ROOT's DAOS layout of an RNTuple is written against.
//!
//! [DAOS](https://docs.daos.io) keeps *pools*, each holding *containers*, each holding
//! *objects* named by a 128-bit OID ([`DaosOid`]). An object holds values under a
//! distribution key (dkey) and an attribute key (akey); ROOT's keys are u64 numbers,
//! which it passes to DAOS as their 8 little-endian bytes, and every value is a DAOS
//! *single value* (`DAOS_IOD_SINGLE`): written whole, replaced whole by the next update,
//! fetched whole. That is all the layout needs, and all [`DaosStore`] offers, with the
//! semantics of ROOT's test double `libdaos_mock`: pools and containers by label, a pool
//! there as soon as it is named, a container created by label (creating it again is no
//! error) and opened only if it exists, one value per (OID, dkey, akey), and a fetch of
//! a key never written finding nothing (`None`; [`DaosContainer::fetch_existing`] makes
//! it an [`Error::NotFound`]).
//!
//! The stores address objects by the OID the layout computes (for ROOT's layout: `lo`
//! from the layout's tables, the ntuple index in `hi`). Two stores live here:
//! [`MemoryDaos`], maps in memory shared by its clones (tests), and [`DirectoryDaos`](crate::DirectoryDaos), one
//! file per value under a directory (tests and debugging: the layout can be looked at
//! with `ls`). A [`DaosContainer`] is an opened container of a store, the handle the
//! layout's reader and writer work with.
//!
//! # A real DAOS
//!
//! DAOS cannot be installed on the machines this crate is built and tested on (no
//! packages for the distribution, no DAOS server or engine, no `pydaos`), so there is no
//! binding to `libdaos` here. One would be a third [`DaosStore`], behind a cargo feature
//! off by default (`daos`), linking `libdaos` and `libgurt` (FFI declarations written by
//! hand or with bindgen against `daos.h`; a build script finding them through
//! `pkg-config` or `DAOS_DIR`), and would:
//!
//! - call `daos_init` once per process (and `daos_fini` at exit);
//! - connect to the pool by label or UUID (`daos_pool_connect`, read-write), once per
//!   pool, keeping the handle in an `Arc` shared by the containers opened in it;
//! - for writing, create the container by label (`daos_cont_create_with_label`, ignoring
//!   `-DER_EXIST`; only for a valid label, not a UUID: [`is_valid_label`]), then open it
//!   (`daos_cont_open`) by label or UUID;
//! - complete each OID before opening the object: `daos_obj_generate_oid` with type
//!   `DAOS_OT_MULTI_UINT64`, the object class (ROOT 6.40: `OC_SX` for the metadata and
//!   page lists, the anchor's class for the pages; ROOT master: no class for the anchor,
//!   the anchor's class for the rest) and the hints `DAOS_OCH_RDD_DEF |
//!   DAOS_OCH_SHD_DEF`, which fill the top 32 bits of `hi`; skipped for `OC_UNKNOWN`,
//!   where the OID is used as given. The object class thus becomes part of the key (a
//!   parameter the trait would gain with such a binding);
//! - fetch with `daos_obj_fetch` (an I/O descriptor per akey, `DAOS_IOD_SINGLE`, size
//!   `DAOS_REC_ANY` to learn the size first or the expected size, one scatter-gather
//!   list per akey) and the conditional flags `DAOS_COND_DKEY_FETCH |
//!   DAOS_COND_AKEY_FETCH`, so that a missing key is `-DER_NONEXIST` (this trait's
//!   `None`) rather than an empty value; update with `daos_obj_update` (a value of size
//!   0 would punch the akey: the stores here refuse empty values);
//! - run many requests at once ([`DaosStore::fetch_many`], [`DaosStore::update_many`])
//!   asynchronously: an event queue (`daos_eq_create`) per pool connection, a parent
//!   event and one child event per (OID, dkey) request with all its akeys
//!   (`daos_event_init`), launched without waiting, then `daos_event_parent_barrier` and
//!   `daos_event_test`/`daos_eq_poll` until all complete, as ROOT's
//!   `RDaosContainer::VectorReadWrite` does;
//! - close objects, containers and pools (`daos_obj_close`, `daos_cont_close`,
//!   `daos_pool_disconnect`) when the handles drop. DAOS errors (negative `DER_*` codes,
//!   `d_errstr`) would become [`Error::Io`]/[`Error::Write`] naming the container.
//!
//! Such a feature could only be compile-checked here, against the declarations.

use crate::error::{Error, Result};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

/// The longest pool or container label DAOS accepts (`DAOS_PROP_LABEL_MAX_LEN`).
pub const DAOS_LABEL_MAX_LEN: usize = 127;

/// A DAOS object id: 128 bits, as `daos_obj_id_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct DaosOid {
    /// The low 64 bits.
    pub lo: u64,
    /// The high 64 bits (DAOS keeps the top 32 for the object type and class).
    pub hi: u64,
}

impl DaosOid {
    /// The OID `{lo, hi}`.
    pub fn new(lo: u64, hi: u64) -> DaosOid {
        DaosOid { lo, hi }
    }
}

impl fmt::Display for DaosOid {
    /// `hi.lo` in hex, as DAOS tools print OIDs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:x}.{:x}", self.hi, self.lo)
    }
}

/// Where one value lies in a container: object, dkey, akey.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct DaosKey {
    /// The object.
    pub oid: DaosOid,
    /// The distribution key.
    pub dkey: u64,
    /// The attribute key.
    pub akey: u64,
}

impl DaosKey {
    /// The key of the value under `dkey`, `akey` in object `oid`.
    pub fn new(oid: DaosOid, dkey: u64, akey: u64) -> DaosKey {
        DaosKey { oid, dkey, akey }
    }
}

impl fmt::Display for DaosKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "object {}, dkey {:#x}, akey {:#x}",
            self.oid, self.dkey, self.akey
        )
    }
}

/// A container of a pool, both by label (or UUID).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DaosContainerId {
    /// The pool's label or UUID.
    pub pool: String,
    /// The container's label or UUID.
    pub container: String,
}

impl DaosContainerId {
    /// The container `container` of pool `pool`.
    pub fn new(pool: impl Into<String>, container: impl Into<String>) -> DaosContainerId {
        DaosContainerId {
            pool: pool.into(),
            container: container.into(),
        }
    }

    /// Parses a URI `daos://POOL/CONTAINER` as ROOT does (`POOL` without a slash, both
    /// parts not empty); anything else is an [`Error::InvalidArgument`]. The labels are
    /// checked when the container is opened.
    pub fn from_uri(uri: &str) -> Result<DaosContainerId> {
        let parts = uri
            .strip_prefix("daos://")
            .and_then(|rest| rest.split_once('/'))
            .filter(|(pool, container)| !pool.is_empty() && !container.is_empty());
        match parts {
            Some((pool, container)) => Ok(DaosContainerId::new(pool, container)),
            None => Err(Error::InvalidArgument(format!(
                "\"{uri}\" is not a DAOS URI: expected daos://POOL/CONTAINER"
            ))),
        }
    }

    /// The URI `daos://POOL/CONTAINER`.
    pub fn uri(&self) -> String {
        format!("daos://{}/{}", self.pool, self.container)
    }

    /// Checks both labels ([`check_label`]).
    pub(crate) fn check(&self) -> Result<()> {
        check_label(&self.pool, "pool")?;
        check_label(&self.container, "container")
    }

    pub(crate) fn not_found(&self) -> Error {
        Error::NotFound(format!(
            "DAOS container \"{}\" does not exist in pool \"{}\" ({})",
            self.container,
            self.pool,
            self.uri()
        ))
    }
}

impl fmt::Display for DaosContainerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.uri())
    }
}

/// Whether `label` looks like a UUID (`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` in hex),
/// which DAOS takes as a UUID, not a label.
fn is_uuid(label: &str) -> bool {
    let bytes = label.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// Whether DAOS accepts `label` as a new pool or container label: 1 to
/// [`DAOS_LABEL_MAX_LEN`] characters among ASCII letters, digits, `_`, `.`, `:` and `-`,
/// and not a UUID.
pub fn is_valid_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= DAOS_LABEL_MAX_LEN
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
        && !is_uuid(label)
}

/// Checks that `label` names a pool or container (`kind`): a valid label or a UUID;
/// otherwise an [`Error::InvalidArgument`].
pub fn check_label(label: &str, kind: &str) -> Result<()> {
    if is_valid_label(label) || is_uuid(label) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "\"{}\" is not a DAOS {kind} label: 1 to {DAOS_LABEL_MAX_LEN} ASCII letters, \
             digits, '_', '.', ':' or '-'",
            label.escape_debug()
        )))
    }
}

/// The error for an empty value: DAOS would punch (delete) the akey instead.
pub(crate) fn empty_value(container: &DaosContainerId, key: &DaosKey) -> Error {
    Error::InvalidArgument(format!(
        "empty value for {key} in {container}: DAOS deletes a single value updated with \
         size 0"
    ))
}

/// What [`DaosStore::fetch_many`] returns: the keys' values in their order, each `None`
/// when none was written.
pub type Fetched = Result<Vec<Option<Vec<u8>>>>;

/// A DAOS key-value store (see the module documentation): pools and containers by
/// label, one single value per (OID, dkey, akey). Safe to call from many threads.
pub trait DaosStore: Send + Sync + fmt::Debug {
    /// Creates the container (and the pool, if need be); creating an existing one is no
    /// error. Its labels must be valid ([`check_label`]).
    fn create_container(&self, container: &DaosContainerId) -> Result<()>;

    /// Whether the container exists.
    fn has_container(&self, container: &DaosContainerId) -> Result<bool>;

    /// The values of many keys, in their order, each `None` when none was written (a
    /// store that can fetches them at once; not on rayon's global pool, whose threads
    /// may be the decoders waiting for them). A container that does not exist is an
    /// [`Error::NotFound`].
    fn fetch_many(&self, container: &DaosContainerId, keys: &[DaosKey]) -> Fetched;

    /// Writes many values, each replacing any value under its key (a store that can
    /// writes them at once); a later value of one key replaces an earlier one. A
    /// container that does not exist is an [`Error::NotFound`]; an empty value is an
    /// [`Error::InvalidArgument`] (DAOS would delete the key).
    fn update_many(&self, container: &DaosContainerId, values: &[(DaosKey, &[u8])]) -> Result<()>;

    /// The value under `dkey`, `akey` of object `oid` ([`DaosStore::fetch_many`] of one
    /// key).
    fn fetch(
        &self,
        container: &DaosContainerId,
        oid: DaosOid,
        dkey: u64,
        akey: u64,
    ) -> Result<Option<Vec<u8>>> {
        let mut values = self.fetch_many(container, &[DaosKey::new(oid, dkey, akey)])?;
        Ok(values.pop().flatten())
    }

    /// Writes `value` under `dkey`, `akey` of object `oid` ([`DaosStore::update_many`]
    /// of one value).
    fn update(
        &self,
        container: &DaosContainerId,
        oid: DaosOid,
        dkey: u64,
        akey: u64,
        value: &[u8],
    ) -> Result<()> {
        self.update_many(container, &[(DaosKey::new(oid, dkey, akey), value)])
    }

    /// Writes the values of several akeys under one `dkey` of object `oid` at once: a
    /// reader sees every old value or every new one, never some of each, and a writer
    /// that dies meanwhile leaves the old ones. (DAOS applies one `daos_obj_update` of a
    /// dkey, all its I/O descriptors, at one epoch; a `libdaos` binding may as well use
    /// a transaction, `daos_tx_open` … `daos_tx_commit`.) What the layout's anchor,
    /// header and footer, which share a dkey, are replaced with.
    fn update_together(
        &self,
        container: &DaosContainerId,
        oid: DaosOid,
        dkey: u64,
        values: &[(u64, &[u8])],
    ) -> Result<()>;

    /// Removes the values under `keys` (DAOS: `daos_obj_punch_akeys`); a key without a
    /// value is no error.
    fn punch_many(&self, container: &DaosContainerId, keys: &[DaosKey]) -> Result<()>;
}

/// The values of one container of a [`MemoryDaos`]: object → (dkey, akey) → value.
type MemoryContainer = BTreeMap<DaosOid, BTreeMap<(u64, u64), Vec<u8>>>;
/// Pool label → container label → values.
type MemoryPools = HashMap<String, HashMap<String, MemoryContainer>>;

/// A [`DaosStore`] in memory. Clones share the same pools (a writer's store and a
/// reader's are one store).
#[derive(Debug, Clone, Default)]
pub struct MemoryDaos {
    pools: Arc<RwLock<MemoryPools>>,
}

impl MemoryDaos {
    /// An empty store.
    pub fn new() -> MemoryDaos {
        MemoryDaos::default()
    }

    /// Every key holding a value in `container`, sorted (empty when the container does
    /// not exist).
    pub fn keys(&self, container: &DaosContainerId) -> Vec<DaosKey> {
        let pools = self.pools.read().unwrap_or_else(PoisonError::into_inner);
        let Some(objects) = pools
            .get(&container.pool)
            .and_then(|p| p.get(&container.container))
        else {
            return Vec::new();
        };
        objects
            .iter()
            .flat_map(|(oid, values)| {
                values
                    .keys()
                    .map(|&(dkey, akey)| DaosKey::new(*oid, dkey, akey))
            })
            .collect()
    }

    /// Runs `f` on the values of `container` (read-only), or fails if it does not exist.
    fn with_container<T>(
        &self,
        container: &DaosContainerId,
        f: impl FnOnce(&MemoryContainer) -> T,
    ) -> Result<T> {
        let pools = self.pools.read().unwrap_or_else(PoisonError::into_inner);
        pools
            .get(&container.pool)
            .and_then(|p| p.get(&container.container))
            .map(f)
            .ok_or_else(|| container.not_found())
    }

    /// Runs `f` on the values of `container` (to change them), or fails if it does not
    /// exist.
    fn with_container_mut<T>(
        &self,
        container: &DaosContainerId,
        f: impl FnOnce(&mut MemoryContainer) -> T,
    ) -> Result<T> {
        let mut pools = self.pools.write().unwrap_or_else(PoisonError::into_inner);
        pools
            .get_mut(&container.pool)
            .and_then(|p| p.get_mut(&container.container))
            .map(f)
            .ok_or_else(|| container.not_found())
    }
}

fn memory_fetch(objects: &MemoryContainer, key: &DaosKey) -> Option<Vec<u8>> {
    objects
        .get(&key.oid)
        .and_then(|values| values.get(&(key.dkey, key.akey)))
        .cloned()
}

impl DaosStore for MemoryDaos {
    fn create_container(&self, container: &DaosContainerId) -> Result<()> {
        container.check()?;
        let mut pools = self.pools.write().unwrap_or_else(PoisonError::into_inner);
        pools
            .entry(container.pool.clone())
            .or_default()
            .entry(container.container.clone())
            .or_default();
        Ok(())
    }

    fn has_container(&self, container: &DaosContainerId) -> Result<bool> {
        Ok(self.with_container(container, |_| ()).is_ok())
    }

    fn fetch_many(&self, container: &DaosContainerId, keys: &[DaosKey]) -> Fetched {
        self.with_container(container, |objects| {
            keys.iter().map(|k| memory_fetch(objects, k)).collect()
        })
    }

    fn update_many(&self, container: &DaosContainerId, values: &[(DaosKey, &[u8])]) -> Result<()> {
        if let Some((key, _)) = values.iter().find(|(_, v)| v.is_empty()) {
            return Err(empty_value(container, key));
        }
        self.with_container_mut(container, |objects| {
            for (key, value) in values {
                objects
                    .entry(key.oid)
                    .or_default()
                    .insert((key.dkey, key.akey), value.to_vec());
            }
        })
    }

    fn update_together(
        &self,
        container: &DaosContainerId,
        oid: DaosOid,
        dkey: u64,
        values: &[(u64, &[u8])],
    ) -> Result<()> {
        // One lock held over all of them: together.
        let keyed: Vec<(DaosKey, &[u8])> = values
            .iter()
            .map(|&(akey, value)| (DaosKey::new(oid, dkey, akey), value))
            .collect();
        self.update_many(container, &keyed)
    }

    fn punch_many(&self, container: &DaosContainerId, keys: &[DaosKey]) -> Result<()> {
        self.with_container_mut(container, |objects| {
            for key in keys {
                if let Some(values) = objects.get_mut(&key.oid) {
                    values.remove(&(key.dkey, key.akey));
                    if values.is_empty() {
                        objects.remove(&key.oid);
                    }
                }
            }
        })
    }
}

/// An opened container of a [`DaosStore`]: what the DAOS layout reads and writes
/// through. Cheap to clone.
#[derive(Debug, Clone)]
pub struct DaosContainer {
    store: Arc<dyn DaosStore>,
    id: DaosContainerId,
}

impl DaosContainer {
    /// Opens an existing container; one that does not exist is an [`Error::NotFound`].
    pub fn open(store: Arc<dyn DaosStore>, id: DaosContainerId) -> Result<DaosContainer> {
        id.check()?;
        if !store.has_container(&id)? {
            return Err(id.not_found());
        }
        Ok(DaosContainer { store, id })
    }

    /// Opens a container for writing, as ROOT's writer does: creates it first when its
    /// name is a label (a container named by UUID must exist), then opens it.
    pub fn create(store: Arc<dyn DaosStore>, id: DaosContainerId) -> Result<DaosContainer> {
        if is_valid_label(&id.container) {
            store.create_container(&id)?;
        }
        DaosContainer::open(store, id)
    }

    /// The container's pool and labels.
    pub fn id(&self) -> &DaosContainerId {
        &self.id
    }

    /// The store it is in.
    pub fn store(&self) -> &Arc<dyn DaosStore> {
        &self.store
    }

    /// The value under `dkey`, `akey` of object `oid`, or `None` when none was written.
    pub fn fetch(&self, oid: DaosOid, dkey: u64, akey: u64) -> Result<Option<Vec<u8>>> {
        self.store.fetch(&self.id, oid, dkey, akey)
    }

    /// The value under `dkey`, `akey` of object `oid`; none is an [`Error::NotFound`]
    /// naming `what` (the anchor, a page, …) and the key.
    pub fn fetch_existing(
        &self,
        oid: DaosOid,
        dkey: u64,
        akey: u64,
        what: &str,
    ) -> Result<Vec<u8>> {
        self.fetch(oid, dkey, akey)?.ok_or_else(|| {
            Error::NotFound(format!(
                "{what} is not in DAOS container {} ({})",
                self.id,
                DaosKey::new(oid, dkey, akey)
            ))
        })
    }

    /// Writes `value` under `dkey`, `akey` of object `oid`, replacing any value there.
    pub fn update(&self, oid: DaosOid, dkey: u64, akey: u64, value: &[u8]) -> Result<()> {
        self.store.update(&self.id, oid, dkey, akey, value)
    }

    /// The values of many keys, in their order.
    pub fn fetch_many(&self, keys: &[DaosKey]) -> Result<Vec<Option<Vec<u8>>>> {
        self.store.fetch_many(&self.id, keys)
    }

    /// Writes many values.
    pub fn update_many(&self, values: &[(DaosKey, &[u8])]) -> Result<()> {
        self.store.update_many(&self.id, values)
    }

    /// Writes the values of several akeys under one dkey of `oid` at once
    /// ([`DaosStore::update_together`]).
    pub fn update_together(&self, oid: DaosOid, dkey: u64, values: &[(u64, &[u8])]) -> Result<()> {
        self.store.update_together(&self.id, oid, dkey, values)
    }

    /// Removes the values under `keys`.
    pub fn punch_many(&self, keys: &[DaosKey]) -> Result<()> {
        self.store.punch_many(&self.id, keys)
    }
}

/// The environment variable naming the directory that `daos://` URIs are opened in: this
/// build has no `libdaos` binding, so [`open_daos_uri`](crate::open_daos_uri) opens a [`DirectoryDaos`](crate::DirectoryDaos) there
/// in its place (pool `POOL`, container `CONTAINER` under `$RNTUPLE_DAOS_DIR/POOL/CONTAINER`).
pub const DAOS_DIR_VARIABLE: &str = "RNTUPLE_DAOS_DIR";

/// Whether `location` is a DAOS URI (`daos://POOL/CONTAINER`, with or without a
/// `:NAME` after it), as ROOT matches it: the scheme in lower case.
pub fn is_daos(location: &str) -> bool {
    location.starts_with("daos://")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DirectoryDaos;

    fn id() -> DaosContainerId {
        DaosContainerId::new("pool-1", "cont.a")
    }

    /// The semantics every store shares (libdaos_mock's).
    fn check_store(store: Arc<dyn DaosStore>) {
        let c = id();
        let oid = DaosOid::new(u64::MAX, 0x97d7_1486);
        // A container must exist to be read, written or opened.
        assert!(!store.has_container(&c).unwrap());
        for err in [
            store.fetch(&c, oid, 1, 2).unwrap_err(),
            store.update(&c, oid, 1, 2, b"x").unwrap_err(),
            DaosContainer::open(store.clone(), c.clone()).unwrap_err(),
        ] {
            assert!(matches!(err, Error::NotFound(_)), "{err}");
            assert!(err.to_string().contains("daos://pool-1/cont.a"), "{err}");
        }
        // Created by label on opening for writing; again is no error.
        let cont = DaosContainer::create(store.clone(), c.clone()).unwrap();
        DaosContainer::create(store.clone(), c.clone()).unwrap();
        assert!(store.has_container(&c).unwrap());
        let reader = DaosContainer::open(store.clone(), c.clone()).unwrap();
        assert_eq!(reader.id(), &c);

        // A key never written: nothing, or NotFound naming what and where.
        assert_eq!(cont.fetch(oid, 1, 2).unwrap(), None);
        let err = cont
            .fetch_existing(oid, 1, 2, "anchor of ntpl")
            .unwrap_err();
        assert!(matches!(err, Error::NotFound(_)), "{err}");
        assert_eq!(
            err.to_string(),
            "anchor of ntpl is not in DAOS container daos://pool-1/cont.a (object \
             97d71486.ffffffffffffffff, dkey 0x1, akey 0x2)"
        );

        // One value per (oid, dkey, akey), replaced whole.
        cont.update(oid, 1, 2, b"first value").unwrap();
        cont.update(oid, 1, 3, b"other akey").unwrap();
        cont.update(oid, 4, 2, b"other dkey").unwrap();
        cont.update(DaosOid::new(u64::MAX, 7), 1, 2, b"other object")
            .unwrap();
        assert_eq!(reader.fetch(oid, 1, 2).unwrap().unwrap(), b"first value");
        cont.update(oid, 1, 2, b"2nd").unwrap();
        assert_eq!(reader.fetch_existing(oid, 1, 2, "v").unwrap(), b"2nd");
        assert_eq!(reader.fetch(oid, 1, 3).unwrap().unwrap(), b"other akey");
        assert_eq!(reader.fetch(oid, 4, 2).unwrap().unwrap(), b"other dkey");
        assert_eq!(
            reader
                .fetch(DaosOid::new(u64::MAX, 7), 1, 2)
                .unwrap()
                .unwrap(),
            b"other object"
        );
        // Empty values would delete the key in DAOS: refused.
        let err = cont.update(oid, 1, 2, b"").unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert_eq!(reader.fetch(oid, 1, 2).unwrap().unwrap(), b"2nd");

        // Many at once, in order, missing ones as None.
        let keys: Vec<DaosKey> = (0..20u64)
            .map(|i| DaosKey::new(DaosOid::new(i % 3, 5), i, u64::MAX - i))
            .collect();
        let values: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i; usize::from(i) + 1]).collect();
        let pairs: Vec<(DaosKey, &[u8])> = keys
            .iter()
            .zip(&values)
            .map(|(k, v)| (*k, v.as_slice()))
            .collect();
        cont.update_many(&pairs).unwrap();
        let mut wanted = keys.clone();
        wanted.insert(7, DaosKey::new(DaosOid::new(9, 9), 9, 9));
        let got = reader.fetch_many(&wanted).unwrap();
        assert_eq!(got.len(), 21);
        assert_eq!(got[7], None);
        let found: Vec<Vec<u8>> = got.into_iter().flatten().collect();
        assert_eq!(found, values);
        assert_eq!(
            reader.fetch_many(&[]).unwrap(),
            Vec::<Option<Vec<u8>>>::new()
        );

        // Other containers and pools are other namespaces.
        let other =
            DaosContainer::create(store.clone(), DaosContainerId::new("pool-1", "b")).unwrap();
        assert_eq!(other.fetch(oid, 1, 2).unwrap(), None);
        let other_pool =
            DaosContainer::create(store.clone(), DaosContainerId::new("pool-2", "cont.a")).unwrap();
        assert_eq!(other_pool.fetch(oid, 1, 2).unwrap(), None);

        // Several akeys of one dkey together; other akeys of the dkey stay.
        let (a, b): (&[u8], &[u8]) = (b"anchor v2", b"header v2");
        cont.update_together(oid, 1, &[(2, a), (5, b)]).unwrap();
        assert_eq!(reader.fetch(oid, 1, 2).unwrap().unwrap(), a);
        assert_eq!(reader.fetch(oid, 1, 5).unwrap().unwrap(), b);
        assert_eq!(reader.fetch(oid, 1, 3).unwrap().unwrap(), b"other akey");
        let fresh = DaosOid::new(42, 5);
        cont.update_together(fresh, 9, &[(1, b"x"), (2, b"y")])
            .unwrap();
        assert_eq!(reader.fetch(fresh, 9, 2).unwrap().unwrap(), b"y");
        let err = cont.update_together(oid, 1, &[(2, b"")]).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        // Punched values are gone; punching a key without a value is no error.
        cont.punch_many(&[
            DaosKey::new(fresh, 9, 1),
            DaosKey::new(fresh, 9, 2),
            DaosKey::new(oid, 1, 5),
            DaosKey::new(DaosOid::new(77, 77), 7, 7),
        ])
        .unwrap();
        assert_eq!(reader.fetch(fresh, 9, 1).unwrap(), None);
        assert_eq!(reader.fetch(oid, 1, 5).unwrap(), None);
        assert_eq!(reader.fetch(oid, 1, 2).unwrap().unwrap(), a);
        cont.update(oid, 1, 2, b"2nd").unwrap();

        // Labels DAOS refuses are refused.
        for bad in ["", "a/b", "a b", &"x".repeat(128)] {
            let err = store
                .create_container(&DaosContainerId::new("pool-1", bad))
                .unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{bad}: {err}");
        }
        // A container named by UUID is opened, never created.
        let uuid = DaosContainerId::new("pool-1", "0f0e4a11-5a3c-69f0-cafe-4243544b5344");
        let err = DaosContainer::create(store, uuid).unwrap_err();
        assert!(matches!(err, Error::NotFound(_)), "{err}");
    }

    #[test]
    fn memory_store_has_libdaos_mock_semantics() {
        let store = MemoryDaos::new();
        check_store(Arc::new(store.clone()));
        // Clones share the values.
        let keys = store.keys(&id());
        assert_eq!(keys.len(), 4 + 20);
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert!(store.keys(&DaosContainerId::new("none", "none")).is_empty());
    }

    #[test]
    fn directory_store_has_libdaos_mock_semantics() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirectoryDaos::new(dir.path().join("daos"));
        assert_eq!(store.root(), dir.path().join("daos"));
        check_store(Arc::new(store.clone()));
        // One file per value, at a predictable path, no temporary files left.
        let value = dir
            .path()
            .join("daos/pool-1/cont.a/0000000097d71486-ffffffffffffffff")
            .join("0000000000000001/0000000000000002");
        assert_eq!(std::fs::read(value).unwrap(), b"2nd");
        let dkey_dir = dir
            .path()
            .join("daos/pool-1/cont.a/0000000097d71486-ffffffffffffffff/0000000000000001");
        let mut names: Vec<String> = std::fs::read_dir(dkey_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["0000000000000002", "0000000000000003"]);
        // Dot labels would leave the store's directory.
        for bad in [".", ".."] {
            let err = store
                .create_container(&DaosContainerId::new(bad, "c"))
                .unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        }
    }

    #[test]
    fn uris_parse_as_root_parses_them() {
        let id = DaosContainerId::from_uri("daos://pool/cont").unwrap();
        assert_eq!(id, DaosContainerId::new("pool", "cont"));
        assert_eq!(id.uri(), "daos://pool/cont");
        assert_eq!(id.to_string(), "daos://pool/cont");
        // The container part is everything after the first slash.
        assert_eq!(
            DaosContainerId::from_uri("daos://p/c/d").unwrap(),
            DaosContainerId::new("p", "c/d")
        );
        for bad in [
            "daos://pool",
            "daos://pool/",
            "daos:///cont",
            "s3://a/b",
            "DAOS://a/b",
        ] {
            let err = DaosContainerId::from_uri(bad).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{bad}: {err}");
        }
    }

    #[test]
    fn labels_follow_daos_rules() {
        assert!(is_valid_label("my_pool-1.a:b"));
        assert!(is_valid_label(&"x".repeat(127)));
        assert!(!is_valid_label(&"x".repeat(128)));
        assert!(!is_valid_label(""));
        assert!(!is_valid_label("a/b"));
        assert!(!is_valid_label("é"));
        // A UUID is not a label, but names a pool or container.
        let uuid = "0f0e4a11-5a3c-69f0-cafe-4243544b5344";
        assert!(!is_valid_label(uuid));
        assert!(check_label(uuid, "pool").is_ok());
        assert!(check_label("a b", "pool").is_err());
    }

    #[test]
    fn stores_are_shared_across_threads() {
        let store: Arc<dyn DaosStore> = Arc::new(MemoryDaos::new());
        let cont = DaosContainer::create(store, id()).unwrap();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let cont = cont.clone();
                s.spawn(move || {
                    for i in 0..50u64 {
                        cont.update(DaosOid::new(i, t), t, i, &i.to_le_bytes())
                            .unwrap();
                    }
                });
            }
        });
        for t in 0..4u64 {
            for i in 0..50u64 {
                let v = cont.fetch(DaosOid::new(i, t), t, i).unwrap().unwrap();
                assert_eq!(v, i.to_le_bytes());
            }
        }
    }
}

/// What an RNTuple holds in a DAOS container, for a writer that replaces it: the first
/// page id and page-list location past every one it uses (the new RNTuple's values
/// take ids from there, so none of the old one's is overwritten before the new anchor
/// is in place), and the keys of its pages and page lists (what the replacement removes
/// once it is).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DaosExtent {
    /// The first page id after the RNTuple's.
    pub next_page: u64,
    /// The first page-list location (cluster group key) after the RNTuple's.
    pub next_group: u64,
    /// The keys of its pages (under the mapping they were found in) and page lists.
    pub keys: Vec<DaosKey>,
}
