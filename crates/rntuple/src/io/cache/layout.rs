//! Where the cache's files are, how a file is published, and the walk over a cache
//! directory that the purge and the maintenance commands share.

use super::extent;
use super::meta::{identity_hex, parse_identity, VersionMeta};
use super::sys;
use crate::io::ByteRange;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The subdirectory of a cache directory that holds everything of this format.
pub(super) const ROOT_NAME: &str = "rntuple-cache-v1";
/// The purge lock's file (never deleted: a lock on a deleted file excludes no one).
const PURGE_LOCK: &str = "purge.lock";
/// The summed counters of finished processes, in `stats/`.
pub(super) const TOTAL_STATS: &str = "total";
/// A URL's redacted form, in its entry directory.
pub(super) const URL_FILE: &str = "url";
/// The current version's identity, in an entry directory.
pub(super) const CURRENT_FILE: &str = "current";
/// A version's [`VersionMeta`], in its directory.
pub(super) const META_FILE: &str = "meta";
/// A version's extents, in its directory.
pub(super) const EXTENTS_DIR: &str = "x";
/// A temporary file of a writer that may still live is left alone this long.
pub(super) const TEMP_MAX_AGE: Duration = Duration::from_secs(3600);
/// A version directory `current` does not name, or an entry without versions, is left
/// alone this long after it was made: an install may be under way in another process.
pub(super) const ORPHAN_GRACE: Duration = Duration::from_secs(600);

/// The paths of one cache directory's `rntuple-cache-v1/`.
#[derive(Debug, Clone)]
pub(super) struct Root {
    path: PathBuf,
}

impl Root {
    /// The layout below `dir` (the user's cache directory); nothing is created.
    pub(super) fn of(dir: &Path) -> Root {
        Root {
            path: dir.join(ROOT_NAME),
        }
    }

    /// `rntuple-cache-v1/` itself.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the cache was ever created here.
    pub(super) fn exists(&self) -> bool {
        self.path.is_dir()
    }

    /// Where new files are written first.
    pub(super) fn tmp(&self) -> PathBuf {
        self.path.join("tmp")
    }

    /// Where versions and entries go to be deleted.
    pub(super) fn trash(&self) -> PathBuf {
        self.path.join("trash")
    }

    /// The per-process stats files.
    pub(super) fn stats(&self) -> PathBuf {
        self.path.join("stats")
    }

    /// The entries (`e/<hh>/<urlhash>/`).
    pub(super) fn entries(&self) -> PathBuf {
        self.path.join("e")
    }

    /// The purge lock's file.
    pub(super) fn purge_lock(&self) -> PathBuf {
        self.path.join(PURGE_LOCK)
    }

    /// The entry directory of a URL key (32 hex digits).
    pub(super) fn entry(&self, key: &str) -> PathBuf {
        self.entries().join(key.get(..2).unwrap_or("00")).join(key)
    }

    /// Creates the directories of the layout (mode 0700), and `dir` too if missing.
    pub(super) fn create(&self) -> io::Result<()> {
        for d in [self.tmp(), self.trash(), self.stats(), self.entries()] {
            create_dirs(&d)?;
        }
        Ok(())
    }

    /// Takes the purge lock: waiting for it when `wait`, else `None` when another
    /// process holds it. The lock lasts as long as the returned file.
    pub(super) fn lock_purge(&self, wait: bool) -> io::Result<Option<File>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(self.purge_lock())?;
        Ok(sys::lock_exclusive(&file, wait)?.then_some(file))
    }

    /// Renames `path` into `trash/` (under a unique name starting with `label`) and
    /// deletes it. False when `path` could not be renamed (gone already, or no right).
    pub(super) fn trash_and_remove(&self, path: &Path, label: &str) -> bool {
        let target = self
            .trash()
            .join(format!("{label}.{}", sys::own_name("trash")));
        if fs::rename(path, &target).is_err() {
            return false;
        }
        let _ = remove_any(&target);
        true
    }
}

/// Creates `dir` and its missing parents with mode 0700.
pub(super) fn create_dirs(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Deletes a file, or a directory with everything in it.
pub(super) fn remove_any(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) => Err(e),
    }
}

/// The entries of `dir` as (name, path), names that are not UTF-8 left out; empty when
/// `dir` cannot be read.
pub(super) fn list(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            Some((name, e.path()))
        })
        .collect()
}

/// How long ago `path` was last modified, in seconds (0 if unknown or in the future).
pub(super) fn age_secs(path: &Path) -> u64 {
    fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .map_or(0, |d| d.as_secs())
}

/// A new temporary file in `tmp/`, named `<host>.<pid>.<token>.tmp`, mode 0600.
pub(super) fn create_temp(root: &Root) -> io::Result<(PathBuf, File)> {
    let mut attempt = 0;
    loop {
        let path = root.tmp().join(sys::own_name("tmp"));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 8 => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}

/// A temporary file holding `bytes`, written and closed.
fn temp_with(root: &Root, bytes: &[u8]) -> io::Result<PathBuf> {
    let (path, mut file) = create_temp(root)?;
    match file.write_all(bytes) {
        Ok(()) => Ok(path),
        Err(e) => {
            let _ = fs::remove_file(&path);
            Err(e)
        }
    }
}

/// Publishes the temporary file `temp` as `dest` unless `dest` exists (`link`, then
/// `unlink` of `temp` whatever happened): true when this one was published, false when
/// another writer's was there first.
pub(super) fn publish_new(temp: &Path, dest: &Path) -> io::Result<bool> {
    let linked = fs::hard_link(temp, dest);
    let _ = fs::remove_file(temp);
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Writes `dest` with `bytes` unless it exists (see [`publish_new`]).
pub(super) fn write_new(root: &Root, dest: &Path, bytes: &[u8]) -> io::Result<bool> {
    publish_new(&temp_with(root, bytes)?, dest)
}

/// Writes `dest` with `bytes`, replacing it whole (a temporary file renamed over it).
pub(super) fn replace_file(root: &Root, dest: &Path, bytes: &[u8]) -> io::Result<()> {
    let temp = temp_with(root, bytes)?;
    fs::rename(&temp, dest).inspect_err(|_| {
        let _ = fs::remove_file(&temp);
    })
}

/// Reads a small file (at most 1 MiB: `meta`, `current`, `url`).
pub(super) fn read_small(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    File::open(path)?.take(1 << 20).read_to_string(&mut text)?;
    Ok(text)
}

/// What a `current` file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Current {
    /// There is none.
    Missing,
    /// It cannot be read or does not hold an identity.
    Broken,
    /// It names this version.
    Is(u128),
}

/// Reads the `current` file of the entry directory `entry`.
pub(super) fn read_current(entry: &Path) -> Current {
    match read_small(&entry.join(CURRENT_FILE)) {
        Ok(text) => {
            parse_identity(text.trim_end_matches('\n')).map_or(Current::Broken, Current::Is)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Current::Missing,
        Err(_) => Current::Broken,
    }
}

/// What a `meta` file holds.
#[derive(Debug, Clone)]
pub(super) enum MetaState {
    /// There is none.
    Missing,
    /// It cannot be read, is not a meta, or names another identity.
    Broken,
    /// A valid meta of its version.
    Valid(Box<VersionMeta>),
}

/// Reads the `meta` of the version directory `version` of identity `identity`.
pub(super) fn read_meta(version: &Path, identity: u128) -> MetaState {
    match read_small(&version.join(META_FILE)) {
        Ok(text) => match VersionMeta::from_json(&text) {
            Some(meta) if meta.identity == identity => MetaState::Valid(Box::new(meta)),
            _ => MetaState::Broken,
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => MetaState::Missing,
        Err(_) => MetaState::Broken,
    }
}

/// One file on disk: its path, size and modification time.
#[derive(Debug, Clone)]
pub(super) struct FileInfo {
    /// The file.
    pub(super) path: PathBuf,
    /// Its size in bytes.
    pub(super) size: u64,
    /// Its modification time (the extents' last use).
    pub(super) modified: SystemTime,
}

impl FileInfo {
    fn of(path: PathBuf) -> Option<FileInfo> {
        let m = fs::symlink_metadata(&path).ok()?;
        Some(FileInfo {
            size: m.len(),
            modified: m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            path,
        })
    }
}

/// A version directory as found.
#[derive(Debug)]
pub(super) struct VersionDir {
    /// The directory.
    pub(super) path: PathBuf,
    /// The identity its name gives.
    pub(super) identity: u128,
    /// Its meta.
    pub(super) meta: MetaState,
    /// When it was made (its meta's modification time, or the directory's).
    pub(super) made: SystemTime,
    /// The extents in `x/`, with the range each file name gives.
    pub(super) extents: Vec<(ByteRange, FileInfo)>,
    /// Other files in it or in `x/` (the meta among them), with their sizes.
    pub(super) other: Vec<FileInfo>,
}

impl VersionDir {
    /// Bytes of all its files.
    pub(super) fn bytes(&self) -> u64 {
        self.extents.iter().map(|(_, f)| f.size).sum::<u64>()
            + self.other.iter().map(|f| f.size).sum::<u64>()
    }

    /// The extent files whose names are not `<offset>-<len>`, and other strays: files
    /// in `x/` and in the version directory besides `meta` and `x/`.
    pub(super) fn strays(&self) -> impl Iterator<Item = &FileInfo> {
        self.other
            .iter()
            .filter(|f| f.path.file_name().is_none_or(|n| n != META_FILE))
    }
}

/// An entry directory as found.
#[derive(Debug)]
pub(super) struct EntryDir {
    /// The directory.
    pub(super) path: PathBuf,
    /// Its key (the URL's hash, 32 hex digits).
    pub(super) key: String,
    /// The redacted URL its `url` file holds.
    pub(super) url: Option<String>,
    /// What its `current` file says.
    pub(super) current: Current,
    /// Its version directories.
    pub(super) versions: Vec<VersionDir>,
    /// Its own files (`url`, `current`, strays), with their sizes.
    pub(super) files: Vec<FileInfo>,
    /// When the directory was last modified.
    pub(super) modified: SystemTime,
}

impl EntryDir {
    /// Bytes of all its files.
    pub(super) fn bytes(&self) -> u64 {
        self.versions.iter().map(VersionDir::bytes).sum::<u64>()
            + self.files.iter().map(|f| f.size).sum::<u64>()
    }

    /// The current version, when `current` names one that is there.
    pub(super) fn current_version(&self) -> Option<&VersionDir> {
        match self.current {
            Current::Is(id) => self.versions.iter().find(|v| v.identity == id),
            _ => None,
        }
    }
}

/// Every entry of the cache at `root` (empty when there is none).
pub(super) fn scan_entries(root: &Root) -> Vec<EntryDir> {
    let mut out = Vec::new();
    for (hh, hh_path) in list(&root.entries()) {
        if hh.len() != 2 || !hh_path.is_dir() {
            continue;
        }
        for (key, path) in list(&hh_path) {
            if key.len() != 32 || parse_identity(&key).is_none() || !key.starts_with(&hh) {
                continue;
            }
            if let Some(entry) = scan_entry(&path, key) {
                out.push(entry);
            }
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

/// The entry directory `path` of key `key`.
fn scan_entry(path: &Path, key: String) -> Option<EntryDir> {
    let modified = fs::symlink_metadata(path).ok()?.modified().ok()?;
    let url = read_small(&path.join(URL_FILE))
        .ok()
        .map(|u| u.trim_end().to_string());
    let current = read_current(path);
    let mut versions = Vec::new();
    let mut files = Vec::new();
    for (name, p) in list(path) {
        match parse_identity(&name) {
            Some(identity) if p.is_dir() => versions.push(scan_version(p, identity)),
            _ => files.extend(FileInfo::of(p)),
        }
    }
    versions.sort_by_key(|v| v.identity);
    Some(EntryDir {
        path: path.to_path_buf(),
        key,
        url,
        current,
        versions,
        files,
        modified,
    })
}

/// The version directory `path` of identity `identity`.
fn scan_version(path: PathBuf, identity: u128) -> VersionDir {
    let meta = read_meta(&path, identity);
    let mut extents = Vec::new();
    let mut other = Vec::new();
    for (name, p) in list(&path) {
        if name == EXTENTS_DIR && p.is_dir() {
            for (xname, xp) in list(&p) {
                match (extent::parse_name(&xname), FileInfo::of(xp)) {
                    (Some(range), Some(info)) => extents.push((range, info)),
                    (None, Some(info)) => other.push(info),
                    _ => {}
                }
            }
        } else {
            other.extend(FileInfo::of(p));
        }
    }
    extents.sort_by_key(|(r, _)| (r.offset, r.len));
    let made = fs::symlink_metadata(path.join(META_FILE))
        .or_else(|_| fs::symlink_metadata(&path))
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH);
    VersionDir {
        path,
        identity,
        meta,
        made,
        extents,
        other,
    }
}

/// Files directly in `dir` (tmp/, stats/, trash/), with their sizes.
pub(super) fn files_in(dir: &Path) -> Vec<(String, FileInfo)> {
    list(dir)
        .into_iter()
        .filter_map(|(name, path)| Some((name, FileInfo::of(path)?)))
        .collect()
}

/// Bytes of everything below `path` (files' sizes; a directory counts nothing itself).
pub(super) fn tree_bytes(path: &Path) -> u64 {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => list(path).iter().map(|(_, p)| tree_bytes(p)).sum(),
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

/// Whether `time` is more than `age` ago.
pub(super) fn older_than(time: SystemTime, age: Duration) -> bool {
    SystemTime::now()
        .duration_since(time)
        .is_ok_and(|d| d > age)
}

/// The name of a version directory: its identity in hex.
pub(super) fn version_name(identity: u128) -> String {
    identity_hex(identity)
}
