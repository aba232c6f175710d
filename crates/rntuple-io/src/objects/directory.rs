//! Objects as files under a root directory.

use super::{no_such_object, past_the_end, validate_key, ObjectStorage};
use crate::dirfd::{existing, Dir, Policy};
use crate::error::{to_usize, Error, Result};
use crate::{ByteRange, IoMetrics, IoMetricsSnapshot};
use rustix::fs::FileType;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
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
/// # Files, not links or special files
///
/// Below the root (whose own path may hold symbolic links), every file and directory
/// is reached one name at a time from the directory above it, never through a symbolic
/// link (`crate::dirfd`): a link in place of an object or a directory is an
/// error naming it, and deleting one removes the link, never what it points to. A FIFO,
/// socket or device in place of an object is refused before it is opened (it could
/// block a reader forever): a read of it fails at once, naming the object.
///
/// # Writes
///
/// [`ObjectStorage::put`] writes a temporary file (`.NAME.obj.XXXXXXXXXXXX.tmp`, in the
/// object's directory) and renames it over the object's file: a reader sees the old object or
/// the new one, never part of one. The file is not synced to disk unless
/// [`DirectoryObjects::durable`] says so (a sync per object costs a disk flush each;
/// a crash may then lose recent objects, not corrupt older ones). [`ObjectStorage::delete`]
/// removes the file, then the directories it leaves empty; the root too, and its
/// parents, when this store created them and they are empty again (a write that failed
/// leaves the disk as it was).
///
/// The root is created by the first put of a store made with
/// [`DirectoryObjects::create`], not before: a write refused or failing before it
/// stores anything creates no directory.
///
/// Names are compared as the file system does: on a case-insensitive one (macOS's
/// default), keys that differ only in case are one object.
#[derive(Debug)]
pub struct DirectoryObjects {
    root: PathBuf,
    name: String,
    durable: bool,
    /// Directories the first put created (the root and missing parents, outermost
    /// first), removed again when they are left empty.
    created: Mutex<Vec<PathBuf>>,
    metrics: IoMetrics,
}

impl DirectoryObjects {
    /// The objects under `root`, which must be a directory.
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        let root = root.as_ref();
        match std::fs::metadata(root) {
            Ok(meta) if meta.is_dir() => Ok(Self::at(root)),
            Ok(_) => Err(not_a_directory(root)),
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

    /// The objects under `root`, which the first put creates (with its parents) if it
    /// is missing; something other than a directory there is an error now.
    pub fn create(root: impl AsRef<Path>) -> Result<Self> {
        let root = root.as_ref();
        match std::fs::metadata(root) {
            Ok(meta) if !meta.is_dir() => Err(not_a_directory(root)),
            _ => Ok(Self::at(root)),
        }
    }

    fn at(root: &Path) -> Self {
        DirectoryObjects {
            root: root.to_path_buf(),
            name: root.display().to_string(),
            durable: false,
            created: Mutex::default(),
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
        let (dirs, file) = names_of(key)?;
        let mut path = self.root.clone();
        path.extend(dirs);
        path.push(file);
        Ok(path)
    }

    /// The path of `key` for messages, whether or not the key is valid.
    fn shown(&self, key: &str) -> String {
        match self.path_of(key) {
            Ok(path) => path.display().to_string(),
            Err(_) => format!("{}/{key}", self.name),
        }
    }

    /// The root's handle; `None` if it does not exist.
    fn open_root(&self) -> std::io::Result<Option<Dir>> {
        existing(Dir::open_path(&self.root, Policy::Anyone))
    }

    /// The root's handle, the root created first if missing (remembering what was
    /// created).
    fn open_or_create_root(&self) -> std::io::Result<Dir> {
        if let Some(root) = self.open_root()? {
            return Ok(root);
        }
        let mut missing = Vec::new();
        let mut at = Some(self.root.as_path());
        while let Some(dir) = at.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            missing.push(dir.to_path_buf());
            at = dir.parent();
        }
        std::fs::create_dir_all(&self.root)?;
        missing.reverse();
        self.lock_created().extend(missing);
        Dir::open_path(&self.root, Policy::Anyone)
    }

    fn lock_created(&self) -> std::sync::MutexGuard<'_, Vec<PathBuf>> {
        self.created.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The handles of the directories of `dirs` (the root's first), `None` if one is
    /// missing; with `create`, missing ones are made.
    fn open_dirs(&self, dirs: &[String], create: bool) -> std::io::Result<Option<Vec<Dir>>> {
        let root = if create {
            self.open_or_create_root()?
        } else {
            match self.open_root()? {
                Some(root) => root,
                None => return Ok(None),
            }
        };
        let names: Vec<&str> = dirs.iter().map(String::as_str).collect();
        existing(root.open_dirs(&names, create))
    }

    /// Stores `bytes` as `key`'s file.
    fn write(&self, key: &str, bytes: &[u8]) -> std::io::Result<()> {
        let (dirs, file) = names_of(key).map_err(std::io::Error::other)?;
        // A concurrent delete may remove an (empty) directory between its creation and
        // the temporary file's: open the chain again, a few times.
        let mut attempts = 0;
        loop {
            let chain = self
                .open_dirs(&dirs, true)?
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
            let dir = chain
                .last()
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
            match dir.write_file(&file, bytes, TEMP_SUFFIX, self.durable) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && attempts < 3 => {
                    attempts += 1;
                }
                other => return other,
            }
        }
    }

    /// Removes `key`'s file, then the directories it leaves empty.
    fn remove(&self, key: &str) -> std::io::Result<()> {
        let (dirs, file) = names_of(key).map_err(std::io::Error::other)?;
        let Some(chain) = self.open_dirs(&dirs, false)? else {
            return Ok(());
        };
        let Some(dir) = chain.last() else {
            return Ok(());
        };
        if existing(dir.unlink(&file))?.is_none() {
            return Ok(());
        }
        // Each directory of the key, innermost first, from the handle above it.
        for (parent, name) in chain.iter().zip(&dirs).rev() {
            if !parent.remove_empty_dir(name) {
                return Ok(());
            }
        }
        // The root and its parents, if this store created them.
        let mut created = self.lock_created();
        while let Some(dir) = created.last() {
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
            created.pop();
        }
        Ok(())
    }

    /// Adds to `out` the keys in `dir` (whose keys start with `key_prefix`, empty or
    /// ending in `/`) that start with `prefix`, and those of the directories below.
    fn walk(&self, dir: &Dir, key_prefix: &str, prefix: &str, out: &mut Vec<String>) -> Result<()> {
        let listing = |source| Error::Io {
            what: format!("{}/{key_prefix} (listing objects)", self.name),
            source,
        };
        for (name, file_type) in dir.names().map_err(listing)? {
            if let Some(segment) = name.strip_suffix(OBJECT_SUFFIX) {
                // Whatever holds an object's name (a special file or a link too, which
                // a read refuses) takes the key.
                let key = format!("{key_prefix}{segment}");
                if file_type != FileType::Directory
                    && key.starts_with(prefix)
                    && validate_key(&key).is_ok()
                {
                    out.push(key);
                }
            } else if let Some(segment) = name.strip_suffix(DIR_SUFFIX) {
                let below = format!("{key_prefix}{segment}/");
                // Only directories (never a link) whose keys can start with `prefix`.
                let relevant = below.starts_with(prefix) || prefix.starts_with(&below);
                if file_type == FileType::Directory
                    && relevant
                    && validate_key(&below[..below.len() - 1]).is_ok()
                {
                    // Removed meanwhile, or replaced by something else: no keys.
                    if let Ok(sub) = dir.open_dir(&name, false) {
                        self.walk(&sub, &below, prefix, out)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Removes the regular files of `dir` named `*.tmp` that `chosen` picks; how many.
fn remove_temporaries(dir: &Dir, chosen: impl Fn(&str) -> bool) -> std::io::Result<u64> {
    let mut removed = 0;
    for (name, file_type) in dir.names()? {
        let temporary = name.ends_with(TEMP_SUFFIX) && chosen(&name);
        if temporary && file_type == FileType::RegularFile && existing(dir.unlink(&name))?.is_some()
        {
            removed += 1;
        }
    }
    Ok(removed)
}

/// The directory names and the file name of `key` (valid).
fn names_of(key: &str) -> Result<(Vec<String>, String)> {
    validate_key(key)?;
    let mut segments: Vec<&str> = key.split('/').collect();
    let last = segments.pop().unwrap_or_default();
    Ok((
        segments
            .iter()
            .map(|s| format!("{s}{DIR_SUFFIX}"))
            .collect(),
        format!("{last}{OBJECT_SUFFIX}"),
    ))
}

fn not_a_directory(root: &Path) -> Error {
    Error::InvalidArgument(format!("{} is not a directory of objects", root.display()))
}

impl ObjectStorage for DirectoryObjects {
    fn name(&self) -> &str {
        &self.name
    }

    fn object_name(&self, key: &str) -> String {
        self.shown(key)
    }

    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
        let shown = self.path_of(key)?.display().to_string();
        self.write(key, &bytes).map_err(|source| Error::Write {
            what: format!("object {shown}"),
            source,
        })
    }

    fn get(&self, key: &str, range: Option<ByteRange>) -> Result<Vec<u8>> {
        let start = Instant::now();
        let (dirs, file) = names_of(key)?;
        let shown = self.shown(key);
        let io_error = |source: std::io::Error| Error::Io {
            what: format!("object {shown}"),
            source,
        };
        let file = match self.open_dirs(&dirs, false).map_err(io_error)? {
            Some(chain) => match chain.last() {
                Some(dir) => existing(dir.open_file(&file)).map_err(io_error)?,
                None => None,
            },
            None => None,
        }
        .ok_or_else(|| no_such_object(&shown))?;
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
        let (dirs, file) = names_of(key)?;
        let io_error = |source: std::io::Error| Error::Io {
            what: format!("object {}", self.shown(key)),
            source,
        };
        match self.open_dirs(&dirs, false).map_err(io_error)? {
            Some(chain) => match chain.last() {
                Some(dir) => existing(dir.stat_file(&file))
                    .map(|meta| meta.map(|m| m.size))
                    .map_err(io_error),
                None => Ok(None),
            },
            None => Ok(None),
        }
    }

    fn delete(&self, key: &str) -> Result<()> {
        let shown = self.path_of(key)?.display().to_string();
        self.remove(key).map_err(|source| Error::Write {
            what: format!("object {shown} (removing it)"),
            source,
        })
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        // Start at the directory of the prefix's complete segments: every key that
        // starts with `prefix` is below it.
        let (dir_key, _) = prefix.rsplit_once('/').unwrap_or(("", prefix));
        let mut dirs = Vec::new();
        let mut key_prefix = String::new();
        if !dir_key.is_empty() {
            // Segments no key can have: no key starts with this prefix (and such a
            // segment must never reach a path).
            if validate_key(dir_key).is_err() {
                return Ok(Vec::new());
            }
            dirs = dir_key
                .split('/')
                .map(|s| format!("{s}{DIR_SUFFIX}"))
                .collect();
            key_prefix = format!("{dir_key}/");
        }
        let opened = self.open_dirs(&dirs, false).map_err(|source| Error::Io {
            what: format!("{}/{key_prefix} (listing objects)", self.name),
            source,
        })?;
        let mut keys = Vec::new();
        if let Some(dir) = opened.as_ref().and_then(|chain| chain.last()) {
            self.walk(dir, &key_prefix, prefix, &mut keys)?;
        }
        keys.sort();
        Ok(keys)
    }

    /// Removes the temporary files of unfinished puts below `prefix` (`KEY/`): those in
    /// the directory of its objects (`.*.tmp`), and those of the object `KEY` itself
    /// beside it (`.KEY.obj.XXXXXXXXXXXX.tmp`: the anchor's). A put in progress loses
    /// its file and fails.
    fn remove_unfinished(&self, prefix: &str) -> Result<u64> {
        let Some(dir_key) = prefix.strip_suffix('/').filter(|k| validate_key(k).is_ok()) else {
            return Ok(0);
        };
        let io_error = |source| Error::Write {
            what: format!("{}/{prefix} (removing unfinished objects)", self.name),
            source,
        };
        let (dirs, file) = names_of(dir_key)?;
        let Some(chain) = self.open_dirs(&dirs, false).map_err(io_error)? else {
            return Ok(0);
        };
        let Some(parent) = chain.last() else {
            return Ok(0);
        };
        let own = format!(".{file}.");
        let mut removed =
            remove_temporaries(parent, |name| name.starts_with(&own)).map_err(io_error)?;
        let below = format!(
            "{}{DIR_SUFFIX}",
            file.strip_suffix(OBJECT_SUFFIX).unwrap_or(&file)
        );
        if let Some(dir) = existing(parent.open_dir(&below, false)).map_err(io_error)? {
            removed += remove_temporaries(&dir, |name| name.starts_with('.')).map_err(io_error)?;
        }
        Ok(removed)
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.metrics.snapshot()
    }
}
