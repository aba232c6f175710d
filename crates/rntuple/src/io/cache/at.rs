//! Every file operation of the cache, relative to a handle on a directory and never
//! through a symbolic link: a directory is opened once (`O_DIRECTORY | O_NOFOLLOW`) and
//! checked on its handle (`fstat`: a directory, the user's, not writable by group or
//! others, on the cache's file system); what is in it is opened, created, linked,
//! renamed and deleted with `openat`, `mkdirat`, `linkat`, `renameat` and `unlinkat`
//! relative to that handle, one name at a time, with `O_NOFOLLOW`. Nothing checks a path
//! and then uses it.
//!
//! A thing found where the cache keeps one of its own that is not what it must be (a
//! symbolic link, a FIFO, a socket, a device, a directory where a file belongs or the
//! reverse, another user's, one writable by others, another file system mounted there)
//! is an [`Unsafe`] finding: never followed, never opened blocking (files are opened
//! with `O_NONBLOCK`, and checked before a byte is read), and removed by name only
//! (`unlinkat` removes a link, never what it points to).

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How deep a deletion walks (the cache's layout is at most 7 deep:
/// `trash/<cleared>/<hh>/<key>/<identity>/x/<extent>`); deeper trees are left.
const MAX_DEPTH: usize = 16;

/// What is wrong with a thing found where the cache keeps one of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unsafe {
    /// A symbolic link: never followed.
    Link,
    /// A FIFO, socket or device (the name says which): never opened.
    Special(&'static str),
    /// A directory where the cache keeps a file.
    DirectoryForFile,
    /// A file where the cache keeps a directory.
    FileForDirectory,
    /// Owned by another user (uid).
    Foreign(u32),
    /// Writable by its group or by others (the mode).
    OpenToOthers(u32),
    /// Another file system mounted inside the cache.
    OtherDevice,
}

impl Unsafe {
    /// Whether the thing is of the wrong kind (a link, a special file, a file where a
    /// directory belongs...) rather than of the wrong owner or mode.
    pub(super) fn is_wrong_kind(self) -> bool {
        !matches!(self, Unsafe::Foreign(_) | Unsafe::OpenToOthers(_))
    }
}

impl fmt::Display for Unsafe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unsafe::Link => f.write_str("a symbolic link (never followed)"),
            Unsafe::Special(kind) => write!(f, "{kind} (never opened)"),
            Unsafe::DirectoryForFile => f.write_str("a directory where the cache keeps a file"),
            Unsafe::FileForDirectory => f.write_str("a file where the cache keeps a directory"),
            Unsafe::Foreign(uid) => {
                let me = effective_uid();
                let you = match super::sys::user_name(me) {
                    Some(name) => format!("user {name}, uid {me}"),
                    None => format!("uid {me}"),
                };
                write!(
                    f,
                    "owned by {}, not by you ({you})",
                    super::sys::describe_user(*uid)
                )
            }
            Unsafe::OpenToOthers(mode) => write!(
                f,
                "writable by {} (mode {:04o})",
                if mode & 0o002 != 0 {
                    "others"
                } else {
                    "its group"
                },
                mode & 0o7777
            ),
            Unsafe::OtherDevice => f.write_str("another file system mounted inside the cache"),
        }
    }
}

/// The payload of an `io::Error` (kind `PermissionDenied`) that carries a finding.
#[derive(Debug)]
struct Finding(Unsafe);

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Finding {}

/// The error of a finding.
pub(super) fn unsafe_error(what: Unsafe) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, Finding(what))
}

/// The finding an error carries, if it is one.
pub(super) fn finding(e: &io::Error) -> Option<Unsafe> {
    e.get_ref()?.downcast_ref::<Finding>().map(|f| f.0)
}

/// The effective user id of this process (who owns what it creates).
pub(super) fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// Anything else: a link, a FIFO, a socket, a device.
    Other(Unsafe),
}

fn kind_of(file_type: FileType) -> Kind {
    match file_type {
        FileType::Directory => Kind::Dir,
        FileType::RegularFile => Kind::File,
        FileType::Symlink => Kind::Other(Unsafe::Link),
        FileType::Fifo => Kind::Other(Unsafe::Special("a FIFO")),
        FileType::Socket => Kind::Other(Unsafe::Special("a socket")),
        FileType::CharacterDevice => Kind::Other(Unsafe::Special("a character device")),
        FileType::BlockDevice => Kind::Other(Unsafe::Special("a block device")),
        _ => Kind::Other(Unsafe::Special("a file of unknown type")),
    }
}

/// What the cache expects at a place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Dir,
    File,
}

/// Why `stat` is not a `want` of the user's on device `dev` (`None`: any device).
fn check(stat: &rfs::Stat, want: Want, dev: Option<u64>) -> Result<(), Unsafe> {
    match (kind_of(FileType::from_raw_mode(stat.st_mode)), want) {
        (Kind::Other(what), _) => return Err(what),
        (Kind::Dir, Want::File) => return Err(Unsafe::DirectoryForFile),
        (Kind::File, Want::Dir) => return Err(Unsafe::FileForDirectory),
        _ => {}
    }
    if stat.st_uid != effective_uid() {
        return Err(Unsafe::Foreign(stat.st_uid));
    }
    // `st_mode` is a u16 on some platforms.
    #[allow(clippy::useless_conversion)]
    let mode = u32::from(stat.st_mode);
    if mode & 0o022 != 0 {
        return Err(Unsafe::OpenToOthers(mode));
    }
    // `st_dev`'s type differs between platforms; its bits are compared as they are.
    #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
    let here = stat.st_dev as u64;
    if dev.is_some_and(|dev| dev != here) {
        return Err(Unsafe::OtherDevice);
    }
    Ok(())
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

/// A file's size, modification time and kind, as `statat` without following links
/// saw it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Meta {
    /// What it is.
    pub(super) kind: Kind,
    /// Its size in bytes.
    pub(super) size: u64,
    /// Its modification time.
    pub(super) modified: SystemTime,
    /// Its device and inode.
    pub(super) id: (u64, u64),
}

#[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
fn meta_of(stat: &rfs::Stat) -> Meta {
    let secs = u64::try_from(stat.st_mtime).unwrap_or(0);
    let nanos = u32::try_from(stat.st_mtime_nsec)
        .unwrap_or(0)
        .min(999_999_999);
    Meta {
        kind: kind_of(FileType::from_raw_mode(stat.st_mode)),
        size: u64::try_from(stat.st_size).unwrap_or(0),
        modified: UNIX_EPOCH + Duration::new(secs, nanos),
        id: (stat.st_dev as u64, stat.st_ino as u64),
    }
}

/// The device and inode of an open file.
pub(super) fn file_id(file: &File) -> io::Result<(u64, u64)> {
    Ok(meta_of(&rfs::fstat(file)?).id)
}

/// An open directory, checked: the user's, not writable by others.
#[derive(Debug)]
pub(super) struct Handle {
    fd: OwnedFd,
    /// Its device and inode.
    id: (u64, u64),
}

impl Handle {
    /// Opens the directory `path` names as the user wrote it (links in the path are
    /// the user's to choose) and checks it on its handle. A finding is an error
    /// carrying it ([`finding`]); a missing directory is `NotFound`.
    pub(super) fn open_named(path: &Path) -> io::Result<Handle> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rfs::open(path, flags, Mode::empty())?;
        Handle::checked(fd, None)
    }

    fn checked(fd: OwnedFd, dev: Option<u64>) -> io::Result<Handle> {
        let stat = rfs::fstat(&fd)?;
        check(&stat, Want::Dir, dev).map_err(unsafe_error)?;
        Ok(Handle {
            id: meta_of(&stat).id,
            fd,
        })
    }

    /// Its device and inode.
    pub(super) fn id(&self) -> (u64, u64) {
        self.id
    }

    /// What the directory itself is (its modification time).
    pub(super) fn meta(&self) -> io::Result<Meta> {
        Ok(meta_of(&rfs::fstat(&self.fd)?))
    }

    /// Another handle on the same directory.
    pub(super) fn try_clone(&self) -> io::Result<Handle> {
        Ok(Handle {
            fd: self.fd.try_clone()?,
            id: self.id,
        })
    }

    /// The error of a failed open of `name`, a finding when the thing there is not a
    /// `want` (a link makes `O_NOFOLLOW` fail with ELOOP, a socket fails with ENXIO).
    fn open_error(&self, name: &OsStr, e: Errno, want: Want) -> io::Error {
        if matches!(
            e,
            Errno::LOOP | Errno::NOTDIR | Errno::MLINK | Errno::NXIO | Errno::ISDIR
        ) {
            if let Ok(stat) = rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                if let Err(what) = check(&stat, want, None) {
                    return unsafe_error(what);
                }
            }
        }
        e.into()
    }

    /// Opens the directory `name` in this one (made, mode 0700, when missing and
    /// `create`), never through a link, and checks it.
    pub(super) fn open_dir(&self, name: impl AsRef<OsStr>, create: bool) -> io::Result<Handle> {
        let name = component(name.as_ref())?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let open = || rfs::openat(&self.fd, name, flags, Mode::empty());
        let fd = match open() {
            Err(Errno::NOENT) if create => match rfs::mkdirat(&self.fd, name, Mode::RWXU) {
                Ok(()) | Err(Errno::EXIST) => open(),
                Err(e) => Err(e),
            },
            other => other,
        }
        .map_err(|e| self.open_error(name, e, Want::Dir))?;
        Handle::checked(fd, Some(self.id.0))
    }

    /// Opens the file `name` for reading, never through a link and without blocking
    /// (a FIFO), and checks it is a regular file of the user's.
    pub(super) fn open_file(&self, name: impl AsRef<OsStr>) -> io::Result<File> {
        let name = component(name.as_ref())?;
        let flags =
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = rfs::openat(&self.fd, name, flags, Mode::empty())
            .map_err(|e| self.open_error(name, e, Want::File))?;
        self.checked_file(fd)
    }

    fn checked_file(&self, fd: OwnedFd) -> io::Result<File> {
        let stat = rfs::fstat(&fd)?;
        check(&stat, Want::File, Some(self.id.0)).map_err(unsafe_error)?;
        Ok(File::from(fd))
    }

    /// Opens (or creates, mode 0600) the file `name` for reading and writing: a lock.
    pub(super) fn open_lock(&self, name: impl AsRef<OsStr>) -> io::Result<File> {
        let name = component(name.as_ref())?;
        let flags = OFlags::RDWR
            | OFlags::CREATE
            | OFlags::NOFOLLOW
            | OFlags::NONBLOCK
            | OFlags::NOCTTY
            | OFlags::CLOEXEC;
        let fd = rfs::openat(&self.fd, name, flags, Mode::RUSR | Mode::WUSR)
            .map_err(|e| self.open_error(name, e, Want::File))?;
        self.checked_file(fd)
    }

    /// Creates the file `name` (mode 0600), which must not exist in any form.
    pub(super) fn create_new(&self, name: impl AsRef<OsStr>) -> io::Result<File> {
        let name = component(name.as_ref())?;
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rfs::openat(&self.fd, name, flags, Mode::RUSR | Mode::WUSR)?;
        Ok(File::from(fd))
    }

    /// What `name` is, without following it.
    pub(super) fn stat(&self, name: impl AsRef<OsStr>) -> io::Result<Meta> {
        let name = component(name.as_ref())?;
        Ok(meta_of(&rfs::statat(
            &self.fd,
            name,
            AtFlags::SYMLINK_NOFOLLOW,
        )?))
    }

    /// Removes the name `name` (a file, a link, a special file; not a directory).
    pub(super) fn unlink(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        let name = component(name.as_ref())?;
        Ok(rfs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }

    /// Renames `name` to `to_name` in the directory `to` (replacing a file there).
    pub(super) fn rename(
        &self,
        name: impl AsRef<OsStr>,
        to: &Handle,
        to_name: impl AsRef<OsStr>,
    ) -> io::Result<()> {
        let (name, to_name) = (component(name.as_ref())?, component(to_name.as_ref())?);
        Ok(rfs::renameat(&self.fd, name, &to.fd, to_name)?)
    }

    /// Links `name` as `to_name` in the directory `to` (never replacing: `AlreadyExists`
    /// when something is there; a link is linked itself, never what it points to).
    pub(super) fn link(
        &self,
        name: impl AsRef<OsStr>,
        to: &Handle,
        to_name: impl AsRef<OsStr>,
    ) -> io::Result<()> {
        let (name, to_name) = (component(name.as_ref())?, component(to_name.as_ref())?);
        Ok(rfs::linkat(
            &self.fd,
            name,
            &to.fd,
            to_name,
            AtFlags::empty(),
        )?)
    }

    /// The names in this directory with what each is (from the listing, else `statat`).
    pub(super) fn list(&self) -> io::Result<Vec<(OsString, Kind)>> {
        let mut out = Vec::new();
        for entry in rfs::Dir::read_from(&self.fd)? {
            let entry = entry?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => match self.stat(name) {
                    Ok(meta) => meta.kind,
                    Err(_) => continue,
                },
                known => kind_of(known),
            };
            out.push((name.to_os_string(), kind));
        }
        Ok(out)
    }

    /// Deletes `name` and, when it is a directory, everything in it: each directory
    /// opened by handle and never through a link, links removed themselves (never what
    /// they point to), nothing on another file system entered. `NotFound` when gone.
    pub(super) fn remove_tree(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
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
        let stat = rfs::fstat(&fd)?;
        let child = Handle {
            id: meta_of(&stat).id,
            fd,
        };
        if child.id.0 != self.id.0 {
            return Err(unsafe_error(Unsafe::OtherDevice));
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

    /// Bytes of the regular files below this directory (links, special files and other
    /// file systems not counted nor entered).
    pub(super) fn tree_bytes(&self) -> u64 {
        self.bytes_below(0)
    }

    fn bytes_below(&self, depth: usize) -> u64 {
        let Ok(entries) = self.list() else {
            return 0;
        };
        let mut total = 0u64;
        for (name, kind) in entries {
            total = total.saturating_add(match kind {
                Kind::File => self.stat(&name).map_or(0, |m| m.size),
                Kind::Dir if depth < MAX_DEPTH => self
                    .open_dir(&name, false)
                    .map_or(0, |d| d.bytes_below(depth + 1)),
                _ => 0,
            });
        }
        total
    }
}

impl AsFd for Handle {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
