//! A [`DaosStore`] in a directory: one file per value (tests and debugging; what
//! `daos://` URIs open in this build, which has no `libdaos`).

use super::daos::{
    empty_value, DaosContainer, DaosContainerId, DaosKey, DaosOid, DaosStore, Fetched,
    DAOS_DIR_VARIABLE,
};
use super::dirfd::{existing, Dir, Policy};
use crate::error::{Error, Result};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The suffix of a file being written (values are named by 16 hex digits).
const TEMP_SUFFIX: &str = ".partial";

/// A [`DaosStore`] in a directory: the value under `dkey`, `akey` of object `oid` in a
/// container is the file `ROOT/POOL/CONTAINER/HI-LO/DKEY/AKEY` (each number in 16 hex
/// digits), a container a directory. Updates write a temporary file beside the value's
/// and rename it over it, so a reader sees the old value or the new one, never a part;
/// they are not synced to disk (a store for tests and debugging). Labels `.` and `..`
/// are refused.
///
/// [`DaosStore::update_together`] writes a new directory for the dkey (its other values
/// linked into it) and exchanges it with the old one in one `renameat2(RENAME_EXCHANGE)`
/// (`renameatx_np(RENAME_SWAP)` on macOS): the values change together. A fetch of many
/// values opens each dkey's directory once, so the values it returns of one dkey are of
/// one generation.
///
/// Below the root (whose own path may hold links: it is the user's), every directory and
/// file is reached one name at a time without following symbolic links, and anything
/// but a regular file in place of a value (a FIFO, a socket, a device, a link) is
/// refused before it is opened, at once, naming it (`crate::dirfd`).
#[derive(Debug, Clone)]
pub struct DirectoryDaos {
    root: PathBuf,
}

/// The directory name of an object and of a dkey, and the file name of an akey.
fn names(key: &DaosKey) -> (String, String, String) {
    (
        format!("{:016x}-{:016x}", key.oid.hi, key.oid.lo),
        format!("{:016x}", key.dkey),
        format!("{:016x}", key.akey),
    )
}

impl DirectoryDaos {
    /// The store under `root` (created with the first container).
    pub fn new(root: impl Into<PathBuf>) -> DirectoryDaos {
        DirectoryDaos { root: root.into() }
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of `container`, its labels checked.
    fn container_dir(&self, container: &DaosContainerId) -> Result<PathBuf> {
        container.check()?;
        for label in [&container.pool, &container.container] {
            if label == "." || label == ".." {
                return Err(Error::InvalidArgument(format!(
                    "\"{label}\" cannot label a DAOS pool or container of a directory store"
                )));
            }
        }
        Ok(self.root.join(&container.pool).join(&container.container))
    }

    /// The handles from the store's root down to `dirs` below `container` (the last is
    /// `dirs`' innermost); `None` when one is missing (with `create`, they are made). A
    /// container that does not exist is an [`Error::NotFound`].
    fn open(
        &self,
        container: &DaosContainerId,
        dirs: &[&str],
        create: bool,
    ) -> Result<Option<Vec<Dir>>> {
        let shown = self.container_dir(container)?;
        let io = |source| Error::Io {
            what: format!("DAOS container {container} ({})", shown.display()),
            source,
        };
        let root = match Dir::open_path(&self.root, Policy::Anyone) {
            Ok(dir) => dir,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(container.not_found()),
            Err(e) => return Err(io(e)),
        };
        let labels = [container.pool.as_str(), container.container.as_str()];
        let Some(mut chain) = existing(root.open_dirs(&labels, false)).map_err(io)? else {
            return Err(container.not_found());
        };
        let Some(container_dir) = chain.pop() else {
            return Err(container.not_found());
        };
        existing(container_dir.open_dirs(dirs, create)).map_err(io)
    }

    /// The value `akey` in the dkey directory `dir`, or `None`.
    fn read_in(dir: &Dir, akey: &str) -> std::io::Result<Option<Vec<u8>>> {
        let Some(mut file) = existing(dir.open_file(akey))? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(Some(bytes))
    }

    /// The path of `key`'s value, for messages.
    fn shown(&self, container: &DaosContainerId, key: &DaosKey) -> String {
        let (object, dkey, akey) = names(key);
        let dir = self.root.join(&container.pool).join(&container.container);
        format!(
            "{key} ({})",
            dir.join(object).join(dkey).join(akey).display()
        )
    }

    /// Writes `values` (akey names and bytes) into a new directory beside the dkey's
    /// (`parent` is the object's), with the dkey's other values linked into it, and
    /// exchanges the two; then removes the old one.
    #[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
    fn replace_dkey(parent: &Dir, dkey: &str, values: &[(String, &[u8])]) -> std::io::Result<()> {
        use rustix::fs::FileType;
        let fresh = super::dirfd::temporary_name(dkey, ".new");
        let new = parent.create_dir(&fresh)?;
        let written = (|| {
            let old = existing(parent.open_dir(dkey, false))?;
            if let Some(old) = &old {
                for (name, file_type) in old.names()? {
                    let replaced = values.iter().any(|(akey, _)| *akey == name);
                    if file_type == FileType::RegularFile && !name.starts_with('.') && !replaced {
                        old.link(&name, &new, &name)?;
                    }
                }
            }
            for (akey, bytes) in values {
                new.write_file(akey, bytes, TEMP_SUFFIX, false)?;
            }
            match old {
                Some(_) => parent.exchange(&fresh, parent, dkey),
                None => parent.rename(&fresh, parent, dkey),
            }
        })();
        // The old values (after the exchange) or the unused new ones (after a failure):
        // files only (a dkey's directory holds values), removed by handle.
        let _ = parent.remove_tree(&fresh);
        written
    }

    /// Without an exchange of directories (no `renameat2` here), the values are
    /// written one after the other: not together.
    #[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
    fn replace_dkey(parent: &Dir, dkey: &str, values: &[(String, &[u8])]) -> std::io::Result<()> {
        let dir = parent.open_dir(dkey, true)?;
        values
            .iter()
            .try_for_each(|(akey, bytes)| dir.write_file(akey, bytes, TEMP_SUFFIX, false))
    }
}

impl DaosStore for DirectoryDaos {
    fn create_container(&self, container: &DaosContainerId) -> Result<()> {
        let dir = self.container_dir(container)?;
        std::fs::create_dir_all(&self.root)
            .and_then(|()| Dir::open_path(&self.root, Policy::Anyone))
            .and_then(|root| {
                let labels = [container.pool.as_str(), container.container.as_str()];
                root.open_dirs(&labels, true).map(drop)
            })
            .map_err(|e| Error::Write {
                what: format!("DAOS container {container} ({})", dir.display()),
                source: e,
            })
    }

    fn has_container(&self, container: &DaosContainerId) -> Result<bool> {
        match self.open(container, &[], false) {
            Ok(_) => Ok(true),
            Err(Error::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn fetch_many(&self, container: &DaosContainerId, keys: &[DaosKey]) -> Fetched {
        // One after the other, on the caller's thread: never on rayon's pool, whose
        // threads may all be decoders waiting for these very pages (a reader's
        // prefetcher calls this), which would deadlock. Each dkey's directory is opened
        // once: its values come from one generation.
        let mut dirs: std::collections::HashMap<(DaosOid, u64), Option<Dir>> =
            std::collections::HashMap::new();
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            let (object, dkey, akey) = names(key);
            let dir = match dirs.entry((key.oid, key.dkey)) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => e.insert(
                    self.open(container, &[&object, &dkey], false)?
                        .and_then(|mut chain| chain.pop()),
                ),
            };
            let value = match dir {
                Some(dir) => Self::read_in(dir, &akey).map_err(|source| Error::Io {
                    what: self.shown(container, key),
                    source,
                })?,
                None => None,
            };
            out.push(value);
        }
        Ok(out)
    }

    fn update_many(&self, container: &DaosContainerId, values: &[(DaosKey, &[u8])]) -> Result<()> {
        if let Some((key, _)) = values.iter().find(|(_, v)| v.is_empty()) {
            return Err(empty_value(container, key));
        }
        // In order: a later value of one key replaces an earlier one.
        for (key, value) in values {
            let (object, dkey, akey) = names(key);
            let write_err = |source| Error::Write {
                what: self.shown(container, key),
                source,
            };
            let chain = self.open(container, &[&object, &dkey], true)?;
            let dir = chain
                .as_ref()
                .and_then(|c| c.last())
                .ok_or_else(|| write_err(std::io::ErrorKind::NotFound.into()))?;
            dir.write_file(&akey, value, TEMP_SUFFIX, false)
                .map_err(write_err)?;
        }
        Ok(())
    }

    fn update_together(
        &self,
        container: &DaosContainerId,
        oid: DaosOid,
        dkey: u64,
        values: &[(u64, &[u8])],
    ) -> Result<()> {
        let first = DaosKey::new(oid, dkey, values.first().map_or(0, |v| v.0));
        if let Some((akey, _)) = values.iter().find(|(_, v)| v.is_empty()) {
            return Err(empty_value(container, &DaosKey::new(oid, dkey, *akey)));
        }
        let (object, dkey_name, _) = names(&first);
        let write_err = |source| Error::Write {
            what: format!(
                "{} (with the other akeys of its dkey)",
                self.shown(container, &first)
            ),
            source,
        };
        let chain = self.open(container, &[&object], true)?;
        let parent = chain
            .as_ref()
            .and_then(|c| c.last())
            .ok_or_else(|| write_err(std::io::ErrorKind::NotFound.into()))?;
        let named: Vec<(String, &[u8])> = values
            .iter()
            .map(|&(akey, bytes)| (format!("{akey:016x}"), bytes))
            .collect();
        Self::replace_dkey(parent, &dkey_name, &named).map_err(write_err)
    }

    fn punch_many(&self, container: &DaosContainerId, keys: &[DaosKey]) -> Result<()> {
        for key in keys {
            let (object, dkey, akey) = names(key);
            let Some(chain) = self.open(container, &[&object, &dkey], false)? else {
                continue;
            };
            let removed = match chain.last() {
                Some(dir) => existing(dir.unlink(&akey)).map(drop),
                None => Ok(()),
            };
            removed.map_err(|source| Error::Write {
                what: format!("{} (removing it)", self.shown(container, key)),
                source,
            })?;
            // The dkey's and the object's directories, once empty.
            if let [.., object_dir, _] = chain.as_slice() {
                if object_dir.remove_empty_dir(&dkey) {
                    if let [.., container_dir, _, _] = chain.as_slice() {
                        container_dir.remove_empty_dir(&object);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Opens the container a `daos://POOL/CONTAINER` URI names (with `create`: for writing,
/// created first when its name is a label, [`DaosContainer::create`]). There is no
/// `libdaos` in this build: the store is a [`DirectoryDaos`] in the directory
/// [`DAOS_DIR_VARIABLE`] names; with the variable unset, an [`Error::Unsupported`]
/// saying so.
pub fn open_daos_uri(uri: &str, create: bool) -> Result<DaosContainer> {
    open_daos_uri_in(uri, crate::settings::daos_dir_from_env(), create)
}

/// [`open_daos_uri`] with the directory store's directory given (`None`: no store):
/// [`crate::SourceOptions::daos_dir`].
pub fn open_daos_uri_in(uri: &str, dir: Option<PathBuf>, create: bool) -> Result<DaosContainer> {
    let id = DaosContainerId::from_uri(uri)?;
    let dir = dir.filter(|d| !d.as_os_str().is_empty()).ok_or_else(|| {
        Error::Unsupported(format!(
            "{uri}: this build of rntuple has no libdaos (no DAOS client); to use ROOT's \
                 DAOS layout in a directory instead, set {DAOS_DIR_VARIABLE} to the directory \
                 holding the pools"
        ))
    })?;
    let store: Arc<dyn DaosStore> = Arc::new(DirectoryDaos::new(dir));
    if create {
        DaosContainer::create(store, id)
    } else {
        DaosContainer::open(store, id)
    }
}

#[cfg(test)]
mod uri_tests {
    use super::*;
    use crate::daos::is_daos;

    #[test]
    fn daos_uris_open_a_directory_store_or_say_there_is_none() {
        assert!(is_daos("daos://pool/cont"));
        assert!(!is_daos("ntpl+file:///x/y"));
        let err = open_daos_uri_in("daos://pool/cont", None, true).unwrap_err();
        assert!(matches!(err, Error::Unsupported(_)), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("no libdaos") && text.contains(DAOS_DIR_VARIABLE),
            "{text}"
        );
        let dir = tempfile::tempdir().unwrap();
        let root = Some(dir.path().to_path_buf());
        let err = open_daos_uri_in("daos://pool/cont", root.clone(), false).unwrap_err();
        assert!(matches!(err, Error::NotFound(_)), "{err}");
        let cont = open_daos_uri_in("daos://pool/cont", root.clone(), true).unwrap();
        assert_eq!(cont.id(), &DaosContainerId::new("pool", "cont"));
        assert!(dir.path().join("pool/cont").is_dir());
        open_daos_uri_in("daos://pool/cont", root, false).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DaosContainer;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    fn container(dir: &Path) -> DaosContainer {
        let store: Arc<dyn DaosStore> = Arc::new(DirectoryDaos::new(dir.join("daos")));
        DaosContainer::create(store, DaosContainerId::new("pool", "cont")).unwrap()
    }

    #[test]
    fn values_of_one_dkey_change_together() {
        let dir = tempfile::tempdir().unwrap();
        let cont = container(dir.path());
        let oid = DaosOid::new(u64::MAX, 7);
        let generation = |g: u8| -> Vec<(u64, Vec<u8>)> {
            (1..=3u64)
                .map(|akey| (akey, vec![g; 100 * akey as usize]))
                .collect()
        };
        let write = |g: u8| {
            let values = generation(g);
            let refs: Vec<(u64, &[u8])> = values.iter().map(|(k, v)| (*k, v.as_slice())).collect();
            cont.update_together(oid, 5, &refs).unwrap();
        };
        write(0);
        cont.update(oid, 5, 9, b"kept").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (cont, stop) = (cont.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut g = 1u8;
                while !stop.load(Ordering::Relaxed) {
                    let values: Vec<(u64, Vec<u8>)> = (1..=3u64)
                        .map(|akey| (akey, vec![g; 100 * akey as usize]))
                        .collect();
                    let refs: Vec<(u64, &[u8])> =
                        values.iter().map(|(k, v)| (*k, v.as_slice())).collect();
                    cont.update_together(oid, 5, &refs).unwrap();
                    g = g.wrapping_add(1);
                }
            })
        };
        let keys: Vec<DaosKey> = (1..=3).map(|akey| DaosKey::new(oid, 5, akey)).collect();
        let mut seen = 0;
        for _ in 0..300 {
            // A reader whose directory was exchanged under it may find a value gone
            // (an error or None), never values of two generations.
            let Ok(values) = cont.fetch_many(&keys) else {
                continue;
            };
            let Some(values) = values.into_iter().collect::<Option<Vec<_>>>() else {
                continue;
            };
            let g = values[0][0];
            assert!(
                values.iter().all(|v| v.iter().all(|&b| b == g)),
                "mixed generations"
            );
            seen += 1;
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        assert!(seen > 0);
        assert_eq!(cont.fetch(oid, 5, 9).unwrap().unwrap(), b"kept");
        // No directory or file of a generation stays behind.
        // (OID hi 7, lo 2^64 - 1.)
        let object = dir
            .path()
            .join(format!("daos/pool/cont/{:016x}-{:016x}", 7, u64::MAX));
        let names: Vec<String> = std::fs::read_dir(&object)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, [format!("{:016x}", 5)]);
    }

    #[test]
    fn special_files_in_place_of_values_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let cont = container(dir.path());
        let oid = DaosOid::new(1, 2);
        cont.update(oid, 3, 4, b"value").unwrap();
        let value = dir.path().join(format!(
            "daos/pool/cont/{:016x}-{:016x}/{:016x}/{:016x}",
            2, 1, 3, 4
        ));
        assert!(value.is_file());
        std::fs::remove_file(&value).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&value)
            .status()
            .unwrap();
        assert!(made.success());
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = cont.clone();
        std::thread::spawn(move || {
            let _ = tx.send(reader.fetch(oid, 3, 4).map_err(|e| e.to_string()));
        });
        let err = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a FIFO blocked the read")
            .unwrap_err();
        assert!(
            err.contains("a FIFO (named pipe) where a regular file belongs"),
            "{err}"
        );
        assert!(err.contains(&value.display().to_string()), "{err}");
        // A link to a file elsewhere: not followed.
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"secret").unwrap();
        std::fs::remove_file(&value).unwrap();
        std::os::unix::fs::symlink(&outside, &value).unwrap();
        let err = cont.fetch(oid, 3, 4).unwrap_err().to_string();
        assert!(
            err.contains("a symbolic link where a regular file belongs"),
            "{err}"
        );
        // Punching removes the link, not the file.
        cont.punch_many(&[DaosKey::new(oid, 3, 4)]).unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"secret");
    }
}
