//! Files below a directory handle, reached one name at a time and never through a
//! symbolic link: the one way the cache of remote reads (`io/cache/`), the directory
//! object store ([`crate::objects::DirectoryObjects`]) and the DAOS directory store
//! ([`crate::DirectoryDaos`]) open, write and remove what they keep.
//!
//! A [`Dir`] is a directory opened once and checked on its handle (`fstat`). What is in
//! it is opened, created, linked, renamed and removed relative to that handle (`openat`,
//! `mkdirat`, `linkat`, `renameat`, `unlinkat`), one name at a time (never a `/`, `.` or
//! `..`), with `O_NOFOLLOW`: nothing checks a path and then uses it. Only the first
//! directory is opened by a path, whose symbolic links are the user's to choose.
//!
//! - A symbolic link where a directory or a file belongs is never followed: opening it
//!   is a [`Refusal`] naming it; removing it removes the link, never what it points to.
//! - A FIFO, socket or device where a file belongs is refused before it is opened (a
//!   `statat` that does not follow links); the open itself neither blocks
//!   (`O_NONBLOCK`) nor takes a terminal (`O_NOCTTY`), and what it opened is checked
//!   again (`fstat`), so that nothing swapped in meanwhile can block a reader.
//! - [`Policy::Private`] (the cache's, as OpenSSH's `StrictModes`) wants more of every
//!   directory and file: the effective user's, writable by neither its group nor others,
//!   and (below the first directory) on the file system of the directory above it; what
//!   it makes is the user's alone (directories 0700, files 0600). [`Policy::Anyone`] (the
//!   stores') checks kinds only and makes directories 0777 and files 0666, less the
//!   umask.
//! - A tree is removed by handle ([`Dir::remove_tree`]): links removed themselves,
//!   nothing on another file system entered, at most [`MAX_DEPTH`] directories deep.
//! - A file appears whole or not at all: written as a temporary file of a name no other
//!   writer picks, created exclusively ([`Dir::write_temporary`]), then published
//!   ([`Dir::publish`]) by `renameat` (replacing) or `linkat` (never replacing: the
//!   first writer wins, on NFS too); [`Dir::write_file`] does both.

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How many directories deep a tree is walked (the cache's layout is at most 7 deep:
/// `trash/<cleared>/<hh>/<key>/<identity>/x/<extent>`); deeper trees are left.
pub(crate) const MAX_DEPTH: usize = 16;

/// How many more names a new temporary file tries when one is taken.
const TEMP_RETRIES: usize = 8;

/// A file type in words, for messages: "a FIFO (named pipe)", "a socket".
pub(crate) fn describe(file_type: FileType) -> &'static str {
    match file_type {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "a file of unknown type",
    }
}

/// [`describe`] without the gloss in parentheses: "a FIFO".
pub(crate) fn describe_briefly(file_type: FileType) -> &'static str {
    let words = describe(file_type);
    words.split_once(" (").map_or(words, |(brief, _)| brief)
}

/// What belongs at a place: a directory or a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    /// A directory.
    Dir,
    /// A regular file.
    File,
}

impl Want {
    /// The file type wanted.
    pub(crate) fn file_type(self) -> FileType {
        match self {
            Want::Dir => FileType::Directory,
            Want::File => FileType::RegularFile,
        }
    }
}

/// What a [`Dir`] wants of the directories and files below it besides their kind, and
/// how it makes new ones. Directories opened from a `Dir` keep its policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Anyone's: kinds are checked, owners, modes and file systems not; new directories
    /// are 0777 and new files 0666, less the umask (the object and DAOS stores).
    Anyone,
    /// The user's alone, as OpenSSH's `StrictModes` wants: each directory and file is
    /// the effective user's and writable by neither its group nor others, and each
    /// directory below the first is on the file system of the one above it; new
    /// directories are 0700 and new files 0600 (the cache).
    Private,
}

impl Policy {
    /// The mode of a new `want`.
    fn mode(self, want: Want) -> Mode {
        Mode::from_raw_mode(match (self, want) {
            (Policy::Anyone, Want::Dir) => 0o777,
            (Policy::Anyone, Want::File) => 0o666,
            (Policy::Private, Want::Dir) => 0o700,
            (Policy::Private, Want::File) => 0o600,
        })
    }

    /// Why `stat` is not a `want` this policy takes, on the device `dev` (`None`: any).
    fn check(self, stat: &rfs::Stat, want: Want, dev: Option<u64>) -> Result<(), Refusal> {
        let found = FileType::from_raw_mode(stat.st_mode);
        if found != want.file_type() {
            return Err(Refusal::Kind { found, want });
        }
        if self == Policy::Anyone {
            return Ok(());
        }
        if stat.st_uid != effective_uid() {
            return Err(Refusal::Foreign(stat.st_uid));
        }
        // `st_mode` is a u16 on some platforms.
        #[allow(clippy::useless_conversion)]
        let mode = u32::from(stat.st_mode);
        if mode & 0o022 != 0 {
            return Err(Refusal::OpenToOthers(mode));
        }
        if dev.is_some_and(|dev| dev != meta_of(stat).id.0) {
            return Err(Refusal::OtherDevice);
        }
        Ok(())
    }
}

/// What is wrong with a thing found where a directory or file belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `found` where `want` belongs: a symbolic link (never followed), a FIFO, socket
    /// or device (never opened), a directory where a file belongs or the reverse.
    Kind {
        /// What is there.
        found: FileType,
        /// What belongs there.
        want: Want,
    },
    /// Owned by another user (uid).
    Foreign(u32),
    /// Writable by its group or by others (the mode).
    OpenToOthers(u32),
    /// On another file system than the directory it is in (a mount point).
    OtherDevice,
}

impl Refusal {
    /// Whether the thing is not what belongs there (of the wrong kind, or another
    /// file system's) rather than of the wrong owner or mode.
    pub(crate) fn is_wrong_kind(self) -> bool {
        !matches!(self, Refusal::Foreign(_) | Refusal::OpenToOthers(_))
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Refusal::Kind { found, want } => {
                let (found_words, want_words) = (describe(found), describe(want.file_type()));
                write!(f, "{found_words} where {want_words} belongs")?;
                f.write_str(match found {
                    FileType::Symlink => " (never followed)",
                    FileType::RegularFile | FileType::Directory => "",
                    _ => " (never opened: special files could block the read or have side effects)",
                })
            }
            Refusal::Foreign(uid) => {
                write!(
                    f,
                    "owned by uid {uid}, not by you (uid {})",
                    effective_uid()
                )
            }
            Refusal::OpenToOthers(mode) => write!(
                f,
                "writable by {} (mode {:04o})",
                if mode & 0o002 != 0 {
                    "others"
                } else {
                    "its group"
                },
                mode & 0o7777
            ),
            Refusal::OtherDevice => f.write_str("another file system mounted here (never entered)"),
        }
    }
}

/// The payload of the `io::Error` of a refusal.
#[derive(Debug)]
struct Refused(Refusal);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Refused {}

/// The error of a refusal: of kind `InvalidInput` for a thing of the wrong kind,
/// `PermissionDenied` for one of the wrong owner, mode or file system.
pub(crate) fn refused(what: Refusal) -> io::Error {
    let kind = match what {
        Refusal::Kind { .. } => io::ErrorKind::InvalidInput,
        _ => io::ErrorKind::PermissionDenied,
    };
    io::Error::new(kind, Refused(what))
}

/// The refusal an error carries, if it is one.
pub(crate) fn refusal(e: &io::Error) -> Option<Refusal> {
    e.get_ref()?.downcast_ref::<Refused>().map(|r| r.0)
}

/// `result`, with `NotFound` as `None` (nothing of that name).
pub(crate) fn existing<T>(result: io::Result<T>) -> io::Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The effective user id of this process (who owns what it creates).
pub(crate) fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// `name` as one component of a path (not empty, no `/`, not `.` or `..`).
fn component(name: &OsStr) -> io::Result<&OsStr> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.contains(&b'/') || bytes == b"." || bytes == b".." {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a file name"),
        ));
    }
    Ok(name)
}

/// A thing's kind, size, modification time and identity, as a `stat` that does not
/// follow links saw it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    /// What it is (a link's is [`FileType::Symlink`]).
    pub(crate) file_type: FileType,
    /// Its size in bytes.
    pub(crate) size: u64,
    /// Its modification time.
    pub(crate) modified: SystemTime,
    /// Its device and inode.
    pub(crate) id: (u64, u64),
}

// `st_dev` and `st_ino`'s types differ between platforms; their bits are kept as they are.
#[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
fn meta_of(stat: &rfs::Stat) -> Meta {
    let secs = u64::try_from(stat.st_mtime).unwrap_or(0);
    let nanos = u32::try_from(stat.st_mtime_nsec)
        .unwrap_or(0)
        .min(999_999_999);
    Meta {
        file_type: FileType::from_raw_mode(stat.st_mode),
        size: u64::try_from(stat.st_size).unwrap_or(0),
        modified: UNIX_EPOCH + Duration::new(secs, nanos),
        id: (stat.st_dev as u64, stat.st_ino as u64),
    }
}

/// The device and inode of an open file.
pub(crate) fn file_id(file: &File) -> io::Result<(u64, u64)> {
    Ok(meta_of(&rfs::fstat(file)?).id)
}

/// A name for a temporary file of `name` that no other writer picks:
/// `.NAME.XXXXXXXXXXXX` + `suffix` (12 random hex digits), or without `NAME.` when
/// `name` is too long for the whole to be a file name.
pub(crate) fn temporary_name(name: &str, suffix: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    let random = hasher.finish() & 0xffff_ffff_ffff;
    // NAME_MAX is 255 bytes on the file systems this runs on.
    if name.len() + suffix.len() + 15 <= 255 {
        format!(".{name}.{random:012x}{suffix}")
    } else {
        format!(".{random:012x}{suffix}")
    }
}

/// How [`Dir::publish`] puts a temporary file in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Publish {
    /// Renamed over what is there (a reader sees the old file or the new one).
    Replace,
    /// Linked unless something is there (then the temporary file is dropped).
    New,
}

/// An open directory, checked as its [`Policy`] wants.
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
    /// Its device and inode.
    id: (u64, u64),
    policy: Policy,
}

impl Dir {
    /// Opens the directory `path` names as the user wrote it (links in the path are the
    /// user's to choose) and checks it on its handle as `policy` wants. A refusal is an
    /// error carrying it ([`refusal`]); a missing directory is `NotFound`.
    pub(crate) fn open_path(path: &Path, policy: Policy) -> io::Result<Dir> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rfs::open(path, flags, Mode::empty())?;
        Dir::checked(fd, policy, None)
    }

    fn checked(fd: OwnedFd, policy: Policy, dev: Option<u64>) -> io::Result<Dir> {
        let stat = rfs::fstat(&fd)?;
        policy.check(&stat, Want::Dir, dev).map_err(refused)?;
        Ok(Dir {
            id: meta_of(&stat).id,
            fd,
            policy,
        })
    }

    /// Its device and inode.
    pub(crate) fn id(&self) -> (u64, u64) {
        self.id
    }

    /// What the directory itself is (its modification time).
    pub(crate) fn meta(&self) -> io::Result<Meta> {
        Ok(meta_of(&rfs::fstat(&self.fd)?))
    }

    /// Another handle on the same directory.
    pub(crate) fn try_clone(&self) -> io::Result<Dir> {
        Ok(Dir {
            fd: self.fd.try_clone()?,
            id: self.id,
            policy: self.policy,
        })
    }

    /// The error of a failed open of `name`: a refusal when the thing there is not a
    /// `want` (a link makes `O_NOFOLLOW` fail with ELOOP, a socket fails with ENXIO).
    fn open_error(&self, name: &OsStr, e: Errno, want: Want) -> io::Error {
        if matches!(
            e,
            Errno::LOOP | Errno::NOTDIR | Errno::MLINK | Errno::NXIO | Errno::ISDIR
        ) {
            if let Ok(stat) = rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                if let Err(what) = self.policy.check(&stat, want, None) {
                    return refused(what);
                }
            }
        }
        e.into()
    }

    /// What `name` is, `None` when nothing is there; refused unless a `want` the policy
    /// takes.
    fn checked_stat(&self, name: &OsStr, want: Want) -> io::Result<Option<Meta>> {
        match rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => {
                self.policy
                    .check(&stat, want, Some(self.id.0))
                    .map_err(refused)?;
                Ok(Some(meta_of(&stat)))
            }
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens the directory `name` in this one (made when missing and `create`), never
    /// through a link, and checks it. `NotFound` when missing.
    pub(crate) fn open_dir(&self, name: impl AsRef<OsStr>, create: bool) -> io::Result<Dir> {
        let name = component(name.as_ref())?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let open = || rfs::openat(&self.fd, name, flags, Mode::empty());
        let fd = match open() {
            Err(Errno::NOENT) if create => {
                match rfs::mkdirat(&self.fd, name, self.policy.mode(Want::Dir)) {
                    Ok(()) | Err(Errno::EXIST) => open(),
                    Err(e) => Err(e),
                }
            }
            other => other,
        }
        .map_err(|e| self.open_error(name, e, Want::Dir))?;
        Dir::checked(fd, self.policy, Some(self.id.0))
    }

    /// Makes the directory `name` in this one, which must not exist in any form
    /// (`AlreadyExists`), and opens it (removed again if that fails).
    pub(crate) fn create_dir(&self, name: impl AsRef<OsStr>) -> io::Result<Dir> {
        let name = component(name.as_ref())?;
        rfs::mkdirat(&self.fd, name, self.policy.mode(Want::Dir))?;
        self.open_dir(name, false).inspect_err(|_| {
            let _ = rfs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR);
        })
    }

    /// The directories `names`, one in the other below this one: every handle on the
    /// way, this one's first (with `create`, missing ones are made). `NotFound` when
    /// one is missing.
    pub(crate) fn open_dirs(self, names: &[&str], create: bool) -> io::Result<Vec<Dir>> {
        let mut chain = vec![self];
        for name in names {
            let next = match chain.last() {
                Some(parent) => parent.open_dir(name, create)?,
                None => return Err(io::ErrorKind::NotFound.into()),
            };
            chain.push(next);
        }
        Ok(chain)
    }

    /// Opens the regular file `name` for reading. Anything else there (a link, a FIFO,
    /// a socket, a device, a directory, or for [`Policy::Private`] another user's) is
    /// refused before it is opened; the open neither blocks nor follows a link swapped
    /// in meanwhile, and what it opened is checked again. `NotFound` when missing.
    pub(crate) fn open_file(&self, name: impl AsRef<OsStr>) -> io::Result<File> {
        let name = component(name.as_ref())?;
        if self.checked_stat(name, Want::File)?.is_none() {
            return Err(io::ErrorKind::NotFound.into());
        }
        let flags =
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = rfs::openat(&self.fd, name, flags, Mode::empty())
            .map_err(|e| self.open_error(name, e, Want::File))?;
        self.checked_file(fd)
    }

    fn checked_file(&self, fd: OwnedFd) -> io::Result<File> {
        let stat = rfs::fstat(&fd)?;
        self.policy
            .check(&stat, Want::File, Some(self.id.0))
            .map_err(refused)?;
        Ok(File::from(fd))
    }

    /// What the regular file `name` is (refused as [`Dir::open_file`] refuses, without
    /// opening it). `NotFound` when missing.
    pub(crate) fn stat_file(&self, name: impl AsRef<OsStr>) -> io::Result<Meta> {
        self.checked_stat(component(name.as_ref())?, Want::File)?
            .ok_or_else(|| io::ErrorKind::NotFound.into())
    }

    /// Opens (or creates) the regular file `name` for reading and writing, as a lock:
    /// refused and checked as [`Dir::open_file`] does.
    pub(crate) fn open_lock(&self, name: impl AsRef<OsStr>) -> io::Result<File> {
        let name = component(name.as_ref())?;
        self.checked_stat(name, Want::File)?;
        let flags = OFlags::RDWR
            | OFlags::CREATE
            | OFlags::NOFOLLOW
            | OFlags::NONBLOCK
            | OFlags::NOCTTY
            | OFlags::CLOEXEC;
        let fd = rfs::openat(&self.fd, name, flags, self.policy.mode(Want::File))
            .map_err(|e| self.open_error(name, e, Want::File))?;
        self.checked_file(fd)
    }

    /// Creates the file `name` for writing, which must not exist in any form (a link
    /// there is `AlreadyExists`, never followed).
    pub(crate) fn create_new(&self, name: impl AsRef<OsStr>) -> io::Result<File> {
        let name = component(name.as_ref())?;
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rfs::openat(&self.fd, name, flags, self.policy.mode(Want::File))?;
        Ok(File::from(fd))
    }

    /// What `name` is, without following it (nothing checked).
    pub(crate) fn stat(&self, name: impl AsRef<OsStr>) -> io::Result<Meta> {
        let name = component(name.as_ref())?;
        Ok(meta_of(&rfs::statat(
            &self.fd,
            name,
            AtFlags::SYMLINK_NOFOLLOW,
        )?))
    }

    /// Removes the name `name`: a file, a link (never what it points to), a special
    /// file; not a directory.
    pub(crate) fn unlink(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        let name = component(name.as_ref())?;
        Ok(rfs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }

    /// Removes the directory `name` if it is empty; `false` if it was not removed (not
    /// empty, not there, or not a directory).
    pub(crate) fn remove_empty_dir(&self, name: impl AsRef<OsStr>) -> bool {
        component(name.as_ref())
            .is_ok_and(|name| rfs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR).is_ok())
    }

    /// Renames `name` to `to_name` in the directory `to` (replacing a file there).
    pub(crate) fn rename(
        &self,
        name: impl AsRef<OsStr>,
        to: &Dir,
        to_name: impl AsRef<OsStr>,
    ) -> io::Result<()> {
        let (name, to_name) = (component(name.as_ref())?, component(to_name.as_ref())?);
        Ok(rfs::renameat(&self.fd, name, &to.fd, to_name)?)
    }

    /// Exchanges `name` and `to_name` in the directory `to`, both of which must exist,
    /// in one step (`renameat2(RENAME_EXCHANGE)`, `renameatx_np(RENAME_SWAP)` on macOS).
    #[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
    pub(crate) fn exchange(
        &self,
        name: impl AsRef<OsStr>,
        to: &Dir,
        to_name: impl AsRef<OsStr>,
    ) -> io::Result<()> {
        let (name, to_name) = (component(name.as_ref())?, component(to_name.as_ref())?);
        let flags = rfs::RenameFlags::EXCHANGE;
        Ok(rfs::renameat_with(&self.fd, name, &to.fd, to_name, flags)?)
    }

    /// Links `name` as `to_name` in the directory `to` (never replacing: `AlreadyExists`
    /// when something is there; a link is linked itself, never what it points to).
    pub(crate) fn link(
        &self,
        name: impl AsRef<OsStr>,
        to: &Dir,
        to_name: impl AsRef<OsStr>,
    ) -> io::Result<()> {
        let (name, to_name) = (component(name.as_ref())?, component(to_name.as_ref())?);
        let flags = AtFlags::empty();
        Ok(rfs::linkat(&self.fd, name, &to.fd, to_name, flags)?)
    }

    /// The names in this directory (`.` and `..` left out) with what each is (a link's
    /// is [`FileType::Symlink`]), from the listing, else a `statat`; a name removed
    /// meanwhile is left out.
    pub(crate) fn list(&self) -> io::Result<Vec<(OsString, FileType)>> {
        let mut out = Vec::new();
        for entry in rfs::Dir::read_from(&self.fd)? {
            let entry = entry?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            let file_type = match entry.file_type() {
                // Some file systems do not say: ask.
                FileType::Unknown => match existing(self.stat(name))? {
                    Some(meta) => meta.file_type,
                    None => continue,
                },
                known => known,
            };
            out.push((name.to_os_string(), file_type));
        }
        Ok(out)
    }

    /// [`Dir::list`] without the names that are not UTF-8.
    pub(crate) fn names(&self) -> io::Result<Vec<(String, FileType)>> {
        let entries = self.list()?.into_iter();
        Ok(entries
            .filter_map(|(name, file_type)| Some((name.into_string().ok()?, file_type)))
            .collect())
    }

    /// A new file in this directory under the first name `name` gives that no one has
    /// taken (a few tries), created as [`Dir::create_new`] does, written by `fill`,
    /// synced to disk when `durable`, and closed: its name. A failure removes it.
    pub(crate) fn write_temporary(
        &self,
        mut name: impl FnMut() -> String,
        fill: impl FnOnce(&mut File) -> io::Result<()>,
        durable: bool,
    ) -> io::Result<String> {
        let mut retries = 0;
        let (temp, mut file) = loop {
            let temp = name();
            match self.create_new(&temp) {
                Ok(file) => break (temp, file),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && retries < TEMP_RETRIES => {
                    retries += 1;
                }
                Err(e) => return Err(e),
            }
        };
        let written = fill(&mut file).and_then(|()| match durable {
            true => file.sync_all(),
            false => Ok(()),
        });
        drop(file);
        match written {
            Ok(()) => Ok(temp),
            Err(e) => {
                let _ = self.unlink(&temp);
                Err(e)
            }
        }
    }

    /// Publishes this directory's temporary file `temp` as `name` in the directory `to`,
    /// as `how` says: true when it was put there, false when [`Publish::New`] found
    /// something there first. The temporary file is gone afterwards, whatever happened.
    /// With `durable`, `to` is synced to disk after.
    pub(crate) fn publish(
        &self,
        temp: &str,
        to: &Dir,
        name: impl AsRef<OsStr>,
        how: Publish,
        durable: bool,
    ) -> io::Result<bool> {
        let published = match how {
            Publish::Replace => self.rename(temp, to, name).map(|()| true),
            Publish::New => match self.link(temp, to, name) {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
                Err(e) => Err(e),
            },
        };
        if how == Publish::New || published.is_err() {
            let _ = self.unlink(temp);
        }
        if durable && published.is_ok() {
            rfs::fsync(&to.fd)?;
        }
        published
    }

    /// Writes `bytes` as the file `name` of this directory, replacing it whole: through
    /// a temporary file beside it (`.NAME.XXXXXXXXXXXX` + `temp_suffix`,
    /// [`temporary_name`]) renamed over it, so that a reader sees the old file or the new
    /// one, never part of one. A link at `name` is replaced, never written through. With
    /// `durable`, the file is synced before the rename and the directory after. A
    /// failure leaves no temporary file.
    pub(crate) fn write_file(
        &self,
        name: &str,
        bytes: &[u8],
        temp_suffix: &str,
        durable: bool,
    ) -> io::Result<()> {
        let fill = |file: &mut File| file.write_all(bytes);
        let temp = self.write_temporary(|| temporary_name(name, temp_suffix), fill, durable)?;
        self.publish(&temp, self, name, Publish::Replace, durable)
            .map(drop)
    }

    /// Deletes `name` and, when it is a directory, everything in it: each directory
    /// opened by handle and never through a link, links removed themselves (never what
    /// they point to), nothing on another file system entered, at most [`MAX_DEPTH`]
    /// deep. `NotFound` when gone.
    pub(crate) fn remove_tree(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        self.remove_below(component(name.as_ref())?, 0)
    }

    fn remove_below(&self, name: &OsStr, depth: usize) -> io::Result<()> {
        match rfs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) => return Ok(()),
            // A directory (EISDIR on Linux, EPERM where POSIX allows it).
            Err(Errno::ISDIR | Errno::PERM) => {}
            Err(e) => return Err(e.into()),
        }
        if depth >= MAX_DEPTH {
            return Err(io::Error::other(format!(
                "more than {MAX_DEPTH} directories deep: left"
            )));
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rfs::openat(&self.fd, name, flags, Mode::empty())?;
        let child = Dir {
            id: meta_of(&rfs::fstat(&fd)?).id,
            fd,
            policy: self.policy,
        };
        if child.id.0 != self.id.0 {
            return Err(refused(Refusal::OtherDevice));
        }
        let mut first_error = None;
        for (entry, _) in child.list()? {
            if let Err(e) = child.remove_below(&entry, depth + 1) {
                if e.kind() != io::ErrorKind::NotFound {
                    first_error.get_or_insert(e);
                }
            }
        }
        match rfs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR) {
            Ok(()) => Ok(()),
            Err(e) => Err(first_error.unwrap_or_else(|| e.into())),
        }
    }

    /// Bytes of the regular files below this directory (links and special files not
    /// counted, directories the policy refuses not entered, at most [`MAX_DEPTH`] deep).
    pub(crate) fn tree_bytes(&self) -> u64 {
        self.bytes_below(0)
    }

    fn bytes_below(&self, depth: usize) -> u64 {
        let Ok(entries) = self.list() else {
            return 0;
        };
        let mut total = 0u64;
        for (name, file_type) in entries {
            total = total.saturating_add(match file_type {
                FileType::RegularFile => self.stat(&name).map_or(0, |m| m.size),
                FileType::Directory if depth < MAX_DEPTH => self
                    .open_dir(&name, false)
                    .map_or(0, |d| d.bytes_below(depth + 1)),
                _ => 0,
            });
        }
        total
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
#[path = "dirfd_tests.rs"]
mod tests;
