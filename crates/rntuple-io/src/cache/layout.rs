//! Where the cache's files are, how a file is published, and the walk over a cache
//! directory that the purge and the maintenance commands share.
//!
//! Everything goes through [`Root`], a checked handle on `<dir>/rntuple-cache-v1/`
//! ([`crate::dirfd`] under [`Policy::Private`]): a path here is relative to it
//! (`e/ab/<key>/<identity>/x/0-100`) and is walked one name at a time, each directory
//! opened with `O_NOFOLLOW` and checked on its handle. A thing that is not what the cache keeps there (a link, a special file,
//! another user's, one writable by others) is noted, counted (`unsafe_files`), and,
//! unless the root was opened to look only, removed by name; the caller then sees it
//! as absent.

use super::extent;
use super::meta::{identity_hex, parse_identity, VersionMeta};
use super::stats::CacheCounters;
use super::sys;
use crate::dirfd::{self, refusal, Dir, Policy, Publish, Refusal, Want};
use crate::error::{Error, Result};
use crate::ByteRange;
use rustix::fs::FileType;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// The subdirectory of a cache directory that holds everything of this format.
pub(super) const ROOT_NAME: &str = "rntuple-cache-v1";
/// The purge lock's file (never deleted: a lock on a deleted file excludes no one).
pub(super) const PURGE_LOCK: &str = "purge.lock";
/// Where every new file is written first.
pub(super) const TMP_DIR: &str = "tmp";
/// Where versions and entries go to be deleted.
pub(super) const TRASH_DIR: &str = "trash";
/// The per-process stats files.
pub(super) const STATS_DIR: &str = "stats";
/// The entries (`e/<hh>/<urlhash>/`).
pub(super) const ENTRIES_DIR: &str = "e";
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
/// Notes kept of unsafe things found (the count goes on).
const MAX_NOTES: usize = 1000;

/// How a cache directory is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    /// To look: nothing is created, changed or removed; what is unsafe is noted.
    Read,
    /// To clean up: what is unsafe is removed (and noted); nothing is created.
    Repair,
    /// For a store: the layout made where missing, what is unsafe removed.
    Create,
}

/// A cache directory refused (another user's, writable by others): the payload of the
/// `PermissionDenied` error that says why.
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// Whether `error` is the refusal of a cache directory (not a fault of the disk).
pub(super) fn is_refusal(error: &Error) -> bool {
    match error.root_cause() {
        Error::Io { source, .. } => source
            .get_ref()
            .is_some_and(|inner| inner.downcast_ref::<Refused>().is_some()),
        _ => false,
    }
}

/// The error refusing the cache directory `dir` because of `what` is wrong with `rel`
/// (`None`: `dir` itself).
fn refused(dir: &Path, rel: Option<&str>, what: Refusal) -> Error {
    let shown = dir.display();
    let place = rel.map_or(String::new(), |rel| format!("{rel} in it is "));
    let said = Said(what);
    let text = if what.is_wrong_kind() {
        format!(
            "refused: {place}{said}: `rntuple cache verify --repair --cache-dir {shown}` \
             removes it (never what it points to), as does the next read through the cache"
        )
    } else {
        let chmod = match what {
            Refusal::OpenToOthers(_) => format!(
                "; or, if only you ever wrote in it, make it yours alone: chmod go-w {shown}"
            ),
            _ => String::new(),
        };
        format!(
            "refused: {place}{said}. Whoever owns or can write a cache directory chooses \
             the bytes read through it (its checksums are not secret), so a cache must be \
             yours alone: use a directory of your own, such as the default \
             ($XDG_CACHE_HOME/rntuple, else ~/.cache/rntuple){chmod}"
        )
    };
    Error::Io {
        what: format!("the cache directory {shown}"),
        source: io::Error::new(io::ErrorKind::PermissionDenied, Refused(text)),
    }
}

/// The error of a failed step on the cache directory `dir`.
fn failed(what: &str, dir: &Path, source: io::Error) -> Error {
    Error::Write {
        what: format!("{what} {}", dir.display()),
        source,
    }
}

/// `rel`'s directory and last name (`("", rel)` at the top).
fn split(rel: &str) -> (&str, &str) {
    rel.rsplit_once('/').unwrap_or(("", rel))
}

/// `rel/name`.
fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}

/// A directory where the cache keeps a file.
const DIRECTORY_FOR_FILE: Refusal = Refusal::Kind {
    found: FileType::Directory,
    want: Want::File,
};

/// A refusal as the cache words it in its notes and refusals: `a FIFO (never opened)`,
/// `a directory where the cache keeps a file`, `owned by user bob (uid 1001), not by
/// you (user alice, uid 1000)`.
struct Said(Refusal);

impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Refusal::Kind {
                found: FileType::Symlink,
                ..
            } => f.write_str("a symbolic link (never followed)"),
            Refusal::Kind {
                found: FileType::Directory,
                ..
            } => f.write_str("a directory where the cache keeps a file"),
            Refusal::Kind {
                found: FileType::RegularFile,
                ..
            } => f.write_str("a file where the cache keeps a directory"),
            Refusal::Kind { found, .. } => {
                write!(f, "{} (never opened)", dirfd::describe_briefly(found))
            }
            Refusal::Foreign(uid) => {
                let me = dirfd::effective_uid();
                let you = match sys::user_name(me) {
                    Some(name) => format!("user {name}, uid {me}"),
                    None => format!("uid {me}"),
                };
                write!(
                    f,
                    "owned by {}, not by you ({you})",
                    sys::describe_user(uid)
                )
            }
            Refusal::OtherDevice => f.write_str("another file system mounted inside the cache"),
            other @ Refusal::OpenToOthers(_) => other.fmt(f),
        }
    }
}

/// An unsafe thing found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Note {
    /// Its path (from the cache directory) and what it was: `rntuple-cache-v1/tmp: a
    /// symbolic link (never followed)`.
    pub(super) line: String,
    /// Whether it was removed.
    pub(super) removed: bool,
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line)?;
        if self.removed {
            f.write_str(" (removed)")?;
        }
        Ok(())
    }
}

/// One cache directory's `rntuple-cache-v1/`, by handle.
#[derive(Debug)]
pub(super) struct Root {
    /// The cache directory as the user named it (for messages).
    dir: PathBuf,
    /// `rntuple-cache-v1/` (`None`: there is no cache there yet).
    handle: Option<Dir>,
    access: Access,
    /// Unsafe things found: relative path -> what was found.
    notes: Mutex<BTreeMap<String, Note>>,
    counters: Arc<CacheCounters>,
}

impl Root {
    /// Opens the cache in `dir` (the user's cache directory) for `access`: `dir` must
    /// be a directory of the user's that nobody else may write, and so must
    /// `rntuple-cache-v1/` in it, else the cache is refused (an [`Error::Io`] of kind
    /// `PermissionDenied` saying why and what to do). A link or special file in the
    /// place of `rntuple-cache-v1/` is noted, and removed unless looking only.
    /// Without a cache there, a root that holds nothing (made, with `dir`, for
    /// [`Access::Create`]).
    pub(super) fn open(dir: &Path, access: Access) -> Result<Root> {
        let mut root = Root {
            dir: dir.to_path_buf(),
            handle: None,
            access,
            notes: Mutex::new(BTreeMap::new()),
            counters: Arc::new(CacheCounters::default()),
        };
        let user = match Dir::open_path(dir, Policy::Private) {
            Ok(user) => user,
            Err(e) if e.kind() == io::ErrorKind::NotFound && access != Access::Create => {
                return Ok(root)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                create_dirs(dir).map_err(|e| failed("the cache directory", dir, e))?;
                Dir::open_path(dir, Policy::Private).map_err(|e| root.refusal(None, e))?
            }
            Err(e) => return Err(root.refusal(None, e)),
        };
        let create = access == Access::Create;
        root.handle = match user.open_dir(ROOT_NAME, create) {
            Ok(handle) => Some(handle),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            // A link or special file: looked at, it holds no cache (and is noted);
            // else removed by name, and for a store a directory made in its place.
            Err(e) => match refusal(&e) {
                Some(what) if what.is_wrong_kind() => {
                    let removed = access != Access::Read && user.remove_tree(ROOT_NAME).is_ok();
                    root.note(ROOT_NAME, what, removed);
                    match create {
                        true => Some(
                            user.open_dir(ROOT_NAME, true)
                                .map_err(|e| root.refusal(Some(ROOT_NAME), e))?,
                        ),
                        false => None,
                    }
                }
                _ => return Err(root.refusal(Some(ROOT_NAME), e)),
            },
        };
        if create {
            for sub in [TMP_DIR, TRASH_DIR, STATS_DIR, ENTRIES_DIR] {
                root.dir(sub, true)
                    .map_err(|e| failed("the cache's layout in", dir, e))?;
            }
        } else {
            root.check_layout();
        }
        Ok(root)
    }

    /// Looks at the layout's own places (the four directories and the purge lock): what
    /// is unsafe there is noted (and removed, unless looking only).
    fn check_layout(&self) {
        let Some(base) = &self.handle else {
            return;
        };
        for sub in [TMP_DIR, TRASH_DIR, STATS_DIR, ENTRIES_DIR] {
            let _ = self.dir(sub, false);
        }
        match base.stat(PURGE_LOCK) {
            Ok(meta) if meta.file_type != FileType::RegularFile => {
                let what = Refusal::Kind {
                    found: meta.file_type,
                    want: Want::File,
                };
                self.found(base, PURGE_LOCK, PURGE_LOCK, what);
            }
            _ => {}
        }
    }

    /// The error of opening `rel` (`None`: the cache directory itself): a refusal for a
    /// finding, else the I/O error.
    fn refusal(&self, rel: Option<&str>, e: io::Error) -> Error {
        match refusal(&e) {
            Some(what) => refused(&self.dir, rel, what),
            None => Error::Io {
                what: format!("the cache directory {}", self.dir.display()),
                source: e,
            },
        }
    }

    /// `<dir>/rntuple-cache-v1` as a path, for messages.
    pub(super) fn path(&self) -> PathBuf {
        self.dir.join(ROOT_NAME)
    }

    /// Whether there is a cache here.
    pub(super) fn exists(&self) -> bool {
        self.handle.is_some()
    }

    /// The device and inode of `rntuple-cache-v1/`.
    pub(super) fn id(&self) -> Option<(u64, u64)> {
        self.handle.as_ref().map(Dir::id)
    }

    /// The counters of what this root found (a store's own).
    pub(super) fn counters(&self) -> &CacheCounters {
        &self.counters
    }

    fn base(&self) -> io::Result<&Dir> {
        self.handle
            .as_ref()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    /// Notes that `rel` was found unsafe (`what`), and whether it was removed.
    fn note(&self, rel: &str, what: Refusal, removed: bool) {
        self.counters.unsafe_file();
        let mut notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        if notes.len() < MAX_NOTES || notes.contains_key(rel) {
            let path = if rel == ROOT_NAME {
                rel.to_string()
            } else {
                format!("{ROOT_NAME}/{rel}")
            };
            let line = format!("{path}: {}", Said(what));
            notes.insert(rel.to_string(), Note { line, removed });
        }
    }

    /// The unsafe things found so far, in path order (and forgets them).
    pub(super) fn take_notes(&self) -> Vec<Note> {
        let mut notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::take(&mut *notes).into_values().collect()
    }

    /// Handles the unsafe `name` in `parent` (at `rel`): noted, counted, and removed by
    /// name unless looking only. True when removed.
    pub(super) fn found(&self, parent: &Dir, rel: &str, name: &str, what: Refusal) -> bool {
        let removed = self.access != Access::Read && parent.remove_tree(name).is_ok();
        self.note(rel, what, removed);
        removed
    }

    /// The directory `name` in `parent` (at `rel`); an unsafe thing there is handled
    /// and, when it was removed and `create`, a directory made in its place.
    fn child_dir(&self, parent: &Dir, rel: &str, name: &str, create: bool) -> io::Result<Dir> {
        match parent.open_dir(name, create) {
            Err(e) => match refusal(&e) {
                Some(what) if self.found(parent, rel, name, what) && create => {
                    parent.open_dir(name, true)
                }
                _ => Err(e),
            },
            opened => opened,
        }
    }

    /// The directory `rel`, walked from the root one name at a time (each made, mode
    /// 0700, when missing and `create`).
    pub(super) fn dir(&self, rel: &str, create: bool) -> io::Result<Dir> {
        let mut at = self.base()?.try_clone()?;
        let mut walked = String::new();
        for name in rel.split('/').filter(|s| !s.is_empty()) {
            walked = join(&walked, name);
            at = self.child_dir(&at, &walked, name, create)?;
        }
        Ok(at)
    }

    /// The file `name` in `parent` (at `rel`) opened for reading; an unsafe thing there
    /// is handled (and the error returned).
    fn open_in(&self, parent: &Dir, rel: &str, name: &str) -> io::Result<File> {
        parent.open_file(name).inspect_err(|e| {
            if let Some(what) = refusal(e) {
                self.found(parent, rel, name, what);
            }
        })
    }

    /// The file `rel` opened for reading (see [`Root::open_in`]).
    pub(super) fn open_file(&self, rel: &str) -> io::Result<File> {
        let (parent, name) = split(rel);
        self.open_in(&self.dir(parent, false)?, rel, name)
    }

    /// What `rel` is, without following it.
    pub(super) fn stat(&self, rel: &str) -> io::Result<dirfd::Meta> {
        let (parent, name) = split(rel);
        self.dir(parent, false)?.stat(name)
    }

    /// Removes the file (or link) `rel`.
    pub(super) fn unlink(&self, rel: &str) -> io::Result<()> {
        let (parent, name) = split(rel);
        self.dir(parent, false)?.unlink(name)
    }

    /// Removes `rel`, a file or a directory with everything in it (never through a
    /// link).
    pub(super) fn remove_any(&self, rel: &str) -> io::Result<()> {
        let (parent, name) = split(rel);
        self.dir(parent, false)?.remove_tree(name)
    }

    /// Takes the purge lock: waiting for it when `wait`, else `None` when another
    /// process holds it. The lock lasts as long as the returned file.
    pub(super) fn lock_purge(&self, wait: bool) -> io::Result<Option<File>> {
        let base = self.base()?;
        let file = match base.open_lock(PURGE_LOCK) {
            Err(e) => match refusal(&e) {
                Some(what) if self.found(base, PURGE_LOCK, PURGE_LOCK, what) => {
                    base.open_lock(PURGE_LOCK)?
                }
                _ => return Err(e),
            },
            Ok(file) => file,
        };
        Ok(sys::lock_exclusive(&file, wait)?.then_some(file))
    }

    /// Renames `rel` into `trash/` (under a unique name starting with `label`) and
    /// deletes it. False when it could not be renamed (gone already, or no right).
    pub(super) fn trash_and_remove(&self, rel: &str, label: &str) -> bool {
        let (parent, name) = split(rel);
        let (Ok(parent), Ok(trash)) = (self.dir(parent, false), self.dir(TRASH_DIR, false)) else {
            return false;
        };
        let target = format!("{label}.{}", sys::own_name("trash"));
        if parent.rename(name, &trash, &target).is_err() {
            return false;
        }
        let _ = trash.remove_tree(&target);
        true
    }

    /// A temporary file in `tmp/` (named `<host>.<pid>.<token>.tmp`, mode 0600) written
    /// by `fill` and closed: `tmp/`'s handle and its name. A failure removes it.
    pub(super) fn write_temp(
        &self,
        fill: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> io::Result<(Dir, String)> {
        let tmp = self.dir(TMP_DIR, self.access == Access::Create)?;
        let temp = tmp.write_temporary(|| sys::own_name("tmp"), fill, false)?;
        Ok((tmp, temp))
    }

    /// Publishes the temporary file `temp` of `tmp` as `dest`, as `how` says
    /// ([`Dir::publish`]; for [`Publish::Replace`], a directory at `dest` is handled
    /// first, as unsafe); `temp` is gone afterwards, whatever happened.
    fn publish(&self, tmp: &Dir, temp: &str, dest: &str, how: Publish) -> io::Result<bool> {
        let (parent, name) = split(dest);
        let parent = match self.dir(parent, false) {
            Ok(parent) => parent,
            Err(e) => {
                let _ = tmp.unlink(temp);
                return Err(e);
            }
        };
        // A rename replaces a file, a link or a special file, not a directory.
        if how == Publish::Replace
            && parent
                .stat(name)
                .is_ok_and(|meta| meta.file_type == FileType::Directory)
        {
            self.found(&parent, dest, name, DIRECTORY_FOR_FILE);
        }
        tmp.publish(temp, &parent, name, how, false)
    }

    /// Publishes the temporary file `temp` of `tmp` as `dest` unless something is there
    /// (`linkat`, then `unlinkat` of `temp` whatever happened): true when this one was
    /// published, false when another writer's was there first.
    pub(super) fn publish_new(&self, tmp: &Dir, temp: &str, dest: &str) -> io::Result<bool> {
        self.publish(tmp, temp, dest, Publish::New)
    }

    /// Writes `dest` with `bytes` unless it exists (see [`Root::publish_new`]).
    pub(super) fn write_new(&self, dest: &str, bytes: &[u8]) -> io::Result<bool> {
        let (tmp, temp) = self.write_temp(|file| file.write_all(bytes))?;
        self.publish_new(&tmp, &temp, dest)
    }

    /// Writes `dest` with `bytes`, replacing it whole (a temporary file renamed over it:
    /// a link or special file there is replaced, a directory handled first).
    pub(super) fn replace_file(&self, dest: &str, bytes: &[u8]) -> io::Result<()> {
        let (tmp, temp) = self.write_temp(|file| file.write_all(bytes))?;
        self.publish(&tmp, &temp, dest, Publish::Replace).map(drop)
    }

    /// Reads the small file `name` of `parent` at `rel` (at most 1 MiB).
    fn read_small_in(&self, parent: &Dir, rel: &str, name: &str) -> io::Result<String> {
        let mut text = String::new();
        self.open_in(parent, rel, name)?
            .take(1 << 20)
            .read_to_string(&mut text)?;
        Ok(text)
    }

    /// Reads the small file `rel` (at most 1 MiB: `meta`, `current`, `url`, stats).
    pub(super) fn read_small(&self, rel: &str) -> io::Result<String> {
        let (parent, name) = split(rel);
        self.read_small_in(&self.dir(parent, false)?, rel, name)
    }

    /// The regular files directly in `rel` (`tmp/`, `stats/`) with their sizes; what
    /// else is there (directories, links, special files) is handled as unsafe.
    pub(super) fn files_in(&self, rel: &str) -> Vec<(String, FileInfo)> {
        let Ok(dir) = self.dir(rel, false) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, file_type) in dir.names().unwrap_or_default() {
            let path = join(rel, &name);
            match file_type {
                FileType::RegularFile => {
                    out.extend(FileInfo::stat(&dir, path, &name).map(|f| (name, f)));
                }
                found => {
                    self.found(
                        &dir,
                        &path,
                        &name,
                        Refusal::Kind {
                            found,
                            want: Want::File,
                        },
                    );
                }
            }
        }
        out
    }

    /// Everything in `trash/`, by name (raw: whatever its names).
    pub(super) fn trash_names(&self) -> Vec<OsString> {
        self.dir(TRASH_DIR, false)
            .and_then(|trash| trash.list())
            .map(|names| names.into_iter().map(|(name, _)| name).collect())
            .unwrap_or_default()
    }

    /// Deletes `name` from `trash/`.
    pub(super) fn remove_from_trash(&self, name: &OsString) -> io::Result<()> {
        self.dir(TRASH_DIR, false)?.remove_tree(name)
    }

    /// Bytes of the cache's regular files.
    pub(super) fn tree_bytes(&self) -> u64 {
        self.handle.as_ref().map_or(0, Dir::tree_bytes)
    }

    /// Renames the entries away into the trash and makes `e/` anew (for a clear):
    /// the name in `trash/` they went to, `None` when there were none.
    pub(super) fn clear_entries(&self) -> io::Result<Option<String>> {
        let base = self.base()?;
        let trash = self.dir(TRASH_DIR, true)?;
        let away = sys::own_name("cleared");
        // A link or special file in the place of `e/` is handled before the rename.
        let moved = match self.dir(ENTRIES_DIR, false) {
            Ok(_) => base.rename(ENTRIES_DIR, &trash, &away).map(|()| Some(away)),
            Err(e) if e.kind() == io::ErrorKind::NotFound || refusal(&e).is_some() => Ok(None),
            Err(e) => Err(e),
        };
        self.dir(ENTRIES_DIR, true)?;
        moved
    }
}

/// Creates `dir` and its missing parents with mode 0700 (the directory the user named:
/// links in that path are the user's).
pub(super) fn create_dirs(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// What a `current` file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Current {
    /// There is none (or it was unsafe, and handled).
    Missing,
    /// It cannot be read or does not hold an identity.
    Broken,
    /// It names this version.
    Is(u128),
}

/// Reads the `current` file of the entry directory `entry` (at `rel`).
fn current_in(root: &Root, entry: &Dir, rel: &str) -> Current {
    match root.read_small_in(entry, &join(rel, CURRENT_FILE), CURRENT_FILE) {
        Ok(text) => {
            parse_identity(text.trim_end_matches('\n')).map_or(Current::Broken, Current::Is)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound || refusal(&e).is_some() => Current::Missing,
        Err(_) => Current::Broken,
    }
}

/// Reads the `current` file of the entry at `rel`.
pub(super) fn read_current(root: &Root, rel: &str) -> Current {
    match root.dir(rel, false) {
        Ok(entry) => current_in(root, &entry, rel),
        Err(_) => Current::Missing,
    }
}

/// What a `meta` file holds.
#[derive(Debug, Clone)]
pub(super) enum MetaState {
    /// There is none (or it was unsafe, and handled).
    Missing,
    /// It cannot be read, is not a meta, or names another identity.
    Broken,
    /// A valid meta of its version.
    Valid(Box<VersionMeta>),
}

/// Reads the `meta` of the version directory `version` (at `rel`) of `identity`.
fn meta_in(root: &Root, version: &Dir, rel: &str, identity: u128) -> MetaState {
    match root.read_small_in(version, &join(rel, META_FILE), META_FILE) {
        Ok(text) => match VersionMeta::from_json(&text) {
            Some(meta) if meta.identity == identity => MetaState::Valid(Box::new(meta)),
            _ => MetaState::Broken,
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound || refusal(&e).is_some() => {
            MetaState::Missing
        }
        Err(_) => MetaState::Broken,
    }
}

/// Reads the `meta` of the version at `rel` of `identity`.
pub(super) fn read_meta(root: &Root, rel: &str, identity: u128) -> MetaState {
    match root.dir(rel, false) {
        Ok(version) => meta_in(root, &version, rel, identity),
        Err(_) => MetaState::Missing,
    }
}

/// One file of the cache: where it is, its size and modification time.
#[derive(Debug, Clone)]
pub(super) struct FileInfo {
    /// Its path relative to `rntuple-cache-v1/`.
    pub(super) rel: String,
    /// Its size in bytes.
    pub(super) size: u64,
    /// Its modification time (the extents' last use).
    pub(super) modified: SystemTime,
}

impl FileInfo {
    fn stat(dir: &Dir, rel: String, name: &str) -> Option<FileInfo> {
        let meta = dir.stat(name).ok()?;
        Some(FileInfo {
            rel,
            size: meta.size,
            modified: meta.modified,
        })
    }
}

/// A version directory as found.
#[derive(Debug)]
pub(super) struct VersionDir {
    /// Its path relative to `rntuple-cache-v1/`.
    pub(super) rel: String,
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
        let meta = join(&self.rel, META_FILE);
        self.other.iter().filter(move |f| f.rel != meta)
    }
}

/// An entry directory as found.
#[derive(Debug)]
pub(super) struct EntryDir {
    /// Its path relative to `rntuple-cache-v1/`.
    pub(super) rel: String,
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

/// The directories in `dir` (at `rel`) by name, opened; regular files left out (and
/// given to `file`), anything else handled as unsafe.
fn subdirs(
    root: &Root,
    dir: &Dir,
    rel: &str,
    mut file: impl FnMut(String, &str),
) -> Vec<(String, String, Dir)> {
    let mut out = Vec::new();
    for (name, file_type) in dir.names().unwrap_or_default() {
        let path = join(rel, &name);
        match file_type {
            FileType::Directory => {
                if let Ok(handle) = root.child_dir(dir, &path, &name, false) {
                    out.push((name, path, handle));
                }
            }
            FileType::RegularFile => file(path, &name),
            found => {
                root.found(
                    dir,
                    &path,
                    &name,
                    Refusal::Kind {
                        found,
                        want: Want::Dir,
                    },
                );
            }
        }
    }
    out
}

/// Every entry of the cache at `root` (empty when there is none).
pub(super) fn scan_entries(root: &Root) -> Vec<EntryDir> {
    let Ok(entries) = root.dir(ENTRIES_DIR, false) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (hh, hh_rel, hh_dir) in subdirs(root, &entries, ENTRIES_DIR, |_, _| {}) {
        if hh.len() != 2 {
            continue;
        }
        for (key, rel, dir) in subdirs(root, &hh_dir, &hh_rel, |_, _| {}) {
            if key.len() != 32 || parse_identity(&key).is_none() || !key.starts_with(&hh) {
                continue;
            }
            if let Some(entry) = scan_entry(root, &dir, rel, key) {
                out.push(entry);
            }
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

/// The entry directory `dir` at `rel` of key `key`.
fn scan_entry(root: &Root, dir: &Dir, rel: String, key: String) -> Option<EntryDir> {
    let modified = dir.meta().ok()?.modified;
    let url = root
        .read_small_in(dir, &join(&rel, URL_FILE), URL_FILE)
        .ok()
        .map(|u| u.trim_end().to_string());
    let current = current_in(root, dir, &rel);
    let mut files = Vec::new();
    let mut versions = Vec::new();
    for (name, path, handle) in subdirs(root, dir, &rel, |path, name| {
        files.extend(FileInfo::stat(dir, path, name));
    }) {
        match parse_identity(&name) {
            Some(identity) => versions.push(scan_version(root, &handle, path, identity)),
            None => files.extend(FileInfo::stat(dir, path, &name)),
        }
    }
    versions.sort_by_key(|v| v.identity);
    Some(EntryDir {
        rel,
        key,
        url,
        current,
        versions,
        files,
        modified,
    })
}

/// The version directory `dir` at `rel` of identity `identity`.
fn scan_version(root: &Root, dir: &Dir, rel: String, identity: u128) -> VersionDir {
    let meta = meta_in(root, dir, &rel, identity);
    let mut extents = Vec::new();
    let mut other = Vec::new();
    for (name, path, handle) in subdirs(root, dir, &rel, |path, name| {
        other.extend(FileInfo::stat(dir, path, name));
    }) {
        if name != EXTENTS_DIR {
            other.extend(FileInfo::stat(dir, path, &name));
            continue;
        }
        for (_, xpath, _) in subdirs(root, &handle, &path, |xpath, xname| {
            match (
                extent::parse_name(xname),
                FileInfo::stat(&handle, xpath, xname),
            ) {
                (Some(range), Some(info)) => extents.push((range, info)),
                (None, Some(info)) => other.push(info),
                _ => {}
            }
        }) {
            // A directory in `x/`: a stray.
            other.extend(FileInfo::stat(&handle, xpath.clone(), split(&xpath).1));
        }
    }
    extents.sort_by_key(|(r, _)| (r.offset, r.len));
    let made = dir
        .stat(META_FILE)
        .or_else(|_| dir.meta())
        .map_or(SystemTime::UNIX_EPOCH, |m| m.modified);
    VersionDir {
        rel,
        identity,
        meta,
        made,
        extents,
        other,
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

/// The entry directory of a URL key (32 hex digits): `e/<hh>/<key>`.
pub(super) fn entry_rel(key: &str) -> String {
    format!("{ENTRIES_DIR}/{}/{key}", key.get(..2).unwrap_or("00"))
}
