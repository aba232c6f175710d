//! Objects as files under a root directory.

use super::{no_such_object, past_the_end, validate_key, ObjectStorage};
use crate::error::{to_usize, Error, Result};
use crate::io::{ByteRange, IoMetrics, IoMetricsSnapshot};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The suffix of an object's file.
const OBJECT_SUFFIX: &str = ".obj";
/// The suffix of a directory that holds the objects of a key prefix.
const DIR_SUFFIX: &str = ".d";
/// The suffix of a file being written (never a key's: it ends neither way above).
const TEMP_SUFFIX: &str = ".tmp";

/// Objects as files under a root directory, one file per object.
///
/// # Layout
///
/// Every segment of a key but the last is a directory named `SEGMENT.d`; the last is a
/// file named `SEGMENT.obj`: key `ds` is `ROOT/ds.obj`, key `ds/0` is
/// `ROOT/ds.d/0.obj`, key `a/b/7` is `ROOT/a.d/b.d/7.obj`. A file and a directory of
/// the same name cannot coexist, and the S3 layout has an object at `ds` (its anchor)
/// and objects below it (`ds/0`, ...): with the two suffixes, no file name is ever a
/// directory name, whatever the keys (`x.obj` and `x.d` are keys like any other: files
/// `x.obj.obj` and `x.d.obj`). Entries named otherwise are not objects and are ignored.
///
/// # Writes
///
/// [`ObjectStorage::put`] writes a temporary file (`.XXXXXX.tmp`, in the object's
/// directory) and renames it over the object's file: a reader sees the old object or
/// the new one, never part of one. The file is not synced to disk unless
/// [`DirectoryObjects::durable`] says so (a sync per object costs a disk flush each;
/// a crash may then lose recent objects, not corrupt older ones). [`ObjectStorage::delete`]
/// removes the file, then the directories it leaves empty (not the root).
///
/// Names are compared as the file system does: on a case-insensitive one (macOS's
/// default), keys that differ only in case are one object.
#[derive(Debug)]
pub struct DirectoryObjects {
    root: PathBuf,
    name: String,
    durable: bool,
    metrics: IoMetrics,
}

impl DirectoryObjects {
    /// The objects under `root`, which must be a directory.
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        let root = root.as_ref();
        match std::fs::metadata(root) {
            Ok(meta) if meta.is_dir() => Ok(Self::at(root)),
            Ok(_) => Err(Error::InvalidArgument(format!(
                "{} is not a directory of objects",
                root.display()
            ))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::NotFound(format!(
                "no directory of objects {}",
                root.display()
            ))),
            Err(source) => Err(Error::Io {
                what: root.display().to_string(),
                source,
            }),
        }
    }

    /// The objects under `root`, created (with its parents) if missing.
    pub fn create(root: impl AsRef<Path>) -> Result<Self> {
        let root = root.as_ref();
        std::fs::create_dir_all(root).map_err(|source| Error::Write {
            what: format!("{} (creating the directory of objects)", root.display()),
            source,
        })?;
        Self::open(root)
    }

    fn at(root: &Path) -> Self {
        DirectoryObjects {
            root: root.to_path_buf(),
            name: root.display().to_string(),
            durable: false,
            metrics: IoMetrics::default(),
        }
    }

    /// With `true`, each put syncs the object's file to disk before the rename, and
    /// its directory after: an object stored survives a crash of the machine.
    pub fn durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file of `key` (valid). See the type's documentation.
    pub fn path_of(&self, key: &str) -> Result<PathBuf> {
        validate_key(key)?;
        let mut path = self.root.clone();
        let mut segments = key.split('/').peekable();
        while let Some(segment) = segments.next() {
            let suffix = if segments.peek().is_some() {
                DIR_SUFFIX
            } else {
                OBJECT_SUFFIX
            };
            path.push(format!("{segment}{suffix}"));
        }
        Ok(path)
    }

    /// The path of `key` for messages, whether or not the key is valid.
    fn shown(&self, key: &str) -> String {
        match self.path_of(key) {
            Ok(path) => path.display().to_string(),
            Err(_) => format!("{}/{key}", self.name),
        }
    }

    /// Writes `bytes` as `path` through a temporary file in `dir`.
    fn write_atomically(&self, dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        // A concurrent delete may remove the (empty) directory between its creation
        // and the temporary file's: create it again, a few times.
        let mut attempts = 0;
        let mut temp = loop {
            std::fs::create_dir_all(dir)?;
            let created = tempfile::Builder::new()
                // Short: the object's own name may be as long as the file system allows.
                .prefix(".")
                .suffix(TEMP_SUFFIX)
                .rand_bytes(6)
                .permissions(default_permissions())
                .tempfile_in(dir);
            match created {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && attempts < 3 => {
                    attempts += 1;
                }
                other => break other?,
            }
        };
        temp.write_all(bytes)?;
        if self.durable {
            temp.as_file().sync_all()?;
        }
        // Dropped on an error, the temporary file is removed.
        temp.persist(path).map_err(|e| e.error)?;
        if self.durable {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    }

    /// Removes the directories from `dir` up to the root (excluded) while they are
    /// empty. Best effort: a directory that is not empty (or that another put filled
    /// meanwhile) stays.
    fn remove_empty_dirs(&self, dir: Option<&Path>) {
        let mut current = dir;
        while let Some(dir) = current {
            if dir == self.root || !dir.starts_with(&self.root) {
                break;
            }
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
            current = dir.parent();
        }
    }

    /// Adds to `out` the keys below `dir` (whose keys start with `key_prefix`, empty
    /// or ending in `/`) that start with `prefix`.
    fn walk(
        &self,
        dir: &Path,
        key_prefix: &str,
        prefix: &str,
        out: &mut Vec<String>,
    ) -> Result<()> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            // Removed meanwhile, or a prefix no key has: nothing there.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => {
                return Err(Error::Io {
                    what: format!("{} (listing objects)", dir.display()),
                    source,
                })
            }
        };
        for entry in entries {
            let entry = entry.map_err(|source| Error::Io {
                what: format!("{} (listing objects)", dir.display()),
                source,
            })?;
            let file_name = entry.file_name();
            // A key is UTF-8: a name that is not was not written here.
            let Some(file_name) = file_name.to_str() else {
                continue;
            };
            if let Some(segment) = file_name.strip_suffix(OBJECT_SUFFIX) {
                let key = format!("{key_prefix}{segment}");
                if key.starts_with(prefix) && validate_key(&key).is_ok() {
                    out.push(key);
                }
            } else if let Some(segment) = file_name.strip_suffix(DIR_SUFFIX) {
                let below = format!("{key_prefix}{segment}/");
                // Only directories whose keys can start with `prefix`.
                let relevant = below.starts_with(prefix) || prefix.starts_with(&below);
                if relevant && validate_key(&below[..below.len() - 1]).is_ok() {
                    self.walk(&entry.path(), &below, prefix, out)?;
                }
            }
        }
        Ok(())
    }
}

/// Permissions for a new object file: read and write for everyone, less the umask (as
/// `File::create` does), not the owner-only permissions of temporary files.
fn default_permissions() -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::Permissions::from_mode(0o666)
}

impl ObjectStorage for DirectoryObjects {
    fn name(&self) -> &str {
        &self.name
    }

    fn object_name(&self, key: &str) -> String {
        self.shown(key)
    }

    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
        let path = self.path_of(key)?;
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        self.write_atomically(&dir, &path, &bytes)
            .map_err(|source| Error::Write {
                what: format!("object {}", path.display()),
                source,
            })
    }

    fn get(&self, key: &str, range: Option<ByteRange>) -> Result<Vec<u8>> {
        let start = Instant::now();
        let path = self.path_of(key)?;
        let shown = path.display().to_string();
        let io_error = |source: std::io::Error| {
            if source.kind() == std::io::ErrorKind::NotFound {
                no_such_object(&shown)
            } else {
                Error::Io {
                    what: format!("object {shown}"),
                    source,
                }
            }
        };
        let file = std::fs::File::open(&path).map_err(io_error)?;
        let size = file.metadata().map_err(io_error)?.len();
        let (offset, len) = match range {
            Some(range) => match range.offset.checked_add(range.len) {
                Some(end) if end <= size => (range.offset, range.len),
                _ => return Err(past_the_end(&shown, size, range)),
            },
            None => (0, size),
        };
        let mut bytes = vec![0; to_usize(len, &format!("object {shown}"))?];
        // Puts replace files by renames, which leave this handle on the old file; a
        // file cut short by some other writer is an error, never a short read.
        file.read_exact_at(&mut bytes, offset).map_err(io_error)?;
        self.metrics.record(false, 1, len, start);
        Ok(bytes)
    }

    fn size_of(&self, key: &str) -> Result<Option<u64>> {
        let path = self.path_of(key)?;
        match std::fs::metadata(&path) {
            Ok(meta) => Ok(Some(meta.len())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(Error::Io {
                what: format!("object {}", path.display()),
                source,
            }),
        }
    }

    fn delete(&self, key: &str) -> Result<()> {
        let path = self.path_of(key)?;
        match std::fs::remove_file(&path) {
            Ok(()) => {
                self.remove_empty_dirs(path.parent());
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(Error::Write {
                what: format!("object {} (removing it)", path.display()),
                source,
            }),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        // Start at the directory of the prefix's complete segments: every key that
        // starts with `prefix` is below it.
        let (dir_key, _) = prefix.rsplit_once('/').unwrap_or(("", prefix));
        let mut dir = self.root.clone();
        let mut key_prefix = String::new();
        if !dir_key.is_empty() {
            // Segments no key can have: no key starts with this prefix (and such a
            // segment must never reach a path).
            if validate_key(dir_key).is_err() {
                return Ok(Vec::new());
            }
            for segment in dir_key.split('/') {
                dir.push(format!("{segment}{DIR_SUFFIX}"));
            }
            key_prefix = format!("{dir_key}/");
        }
        let mut keys = Vec::new();
        self.walk(&dir, &key_prefix, prefix, &mut keys)?;
        keys.sort();
        Ok(keys)
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.metrics.snapshot()
    }
}
