//! Files below a directory, reached without following symbolic links and without
//! opening special files: what the stores that keep objects as files
//! ([`crate::io::objects::DirectoryObjects`], [`crate::io::DirectoryDaos`]) read,
//! write and remove through.
//!
//! The store's root directory is opened by its path (which may hold symbolic links: it
//! is the user's); everything below it is reached one name at a time relative to the
//! directory handle above (`openat`, `mkdirat`, `unlinkat`, `renameat` with
//! `O_NOFOLLOW`), never by a path checked first and used later. So:
//!
//! - a symbolic link in place of a directory or file of the store is never followed:
//!   reading or writing through it is an error naming it, removing it removes the link;
//! - a FIFO, socket or device in place of a file is refused before it is opened (a
//!   `statat` that does not follow links), and the file is opened with `O_NONBLOCK`
//!   and checked again once open (`fstat`), so that nothing swapped in between can
//!   block a reader: no reader ever waits on a FIFO.

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

/// What a name below the root holds, in words (for messages): "a FIFO (named pipe)".
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

/// The error for `found` where a regular file (`want_dir`: a directory) belongs.
fn refused(found: FileType, want_dir: bool) -> io::Error {
    let wanted = if want_dir {
        "a directory"
    } else {
        "a regular file"
    };
    let extra = match found {
        FileType::Symlink => " (symbolic links inside a store are never followed)",
        FileType::RegularFile | FileType::Directory => "",
        _ => " (special files are refused: they could block the read or have side effects)",
    };
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{} where {wanted} belongs{extra}", describe(found)),
    )
}

/// Opens the root directory at `path` (following links in `path`, the user's).
pub(crate) fn open_root(path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// The type of `name` in `dir` (a link is not followed), `None` if there is nothing.
pub(crate) fn type_of(dir: BorrowedFd<'_>, name: &str) -> io::Result<Option<(FileType, u64)>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(Some((
            FileType::from_raw_mode(stat.st_mode),
            u64::try_from(stat.st_size).unwrap_or(0),
        ))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Opens the directory `name` of `dir`, `None` if there is nothing of that name; a
/// symbolic link or anything else but a directory is an error.
pub(crate) fn open_dir(dir: BorrowedFd<'_>, name: &str) -> io::Result<Option<OwnedFd>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        // A link (ELOOP) or not a directory (ENOTDIR): say which.
        Err(e @ (rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR)) => {
            match type_of(dir, name)? {
                Some((found, _)) if found != FileType::Directory => Err(refused(found, true)),
                _ => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// The directories `names` below `root`, one in the other: every handle on the way
/// (`root`'s first), or `None` if one is missing (with `create`, missing ones are
/// made, mode 0777 less the umask).
pub(crate) fn open_dirs(
    root: OwnedFd,
    names: &[&str],
    create: bool,
) -> io::Result<Option<Vec<OwnedFd>>> {
    let mut chain = Vec::with_capacity(names.len() + 1);
    chain.push(root);
    for name in names {
        let parent = chain
            .last()
            .map(AsFd::as_fd)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no directory handle"))?;
        if create {
            match rustix::fs::mkdirat(parent, *name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
        }
        match open_dir(parent, name)? {
            Some(fd) => chain.push(fd),
            None => return Ok(None),
        }
    }
    Ok(Some(chain))
}

/// Opens the regular file `name` of `dir` for reading, `None` if there is nothing of
/// that name. Anything else (a link, a FIFO, a socket, a device, a directory) is an
/// error, found before the open; the open itself does not block (`O_NONBLOCK`) nor
/// follow a link swapped in meanwhile, and what it opened is checked again.
pub(crate) fn open_file(dir: BorrowedFd<'_>, name: &str) -> io::Result<Option<File>> {
    match type_of(dir, name)? {
        None => return Ok(None),
        Some((FileType::RegularFile, _)) => {}
        Some((found, _)) => return Err(refused(found, false)),
    }
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err(refused(FileType::Symlink, false)),
        Err(e) => return Err(e.into()),
    };
    let found = FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode);
    if found != FileType::RegularFile {
        return Err(refused(found, false));
    }
    Ok(Some(File::from(fd)))
}

/// The size of the regular file `name` of `dir`, `None` if there is nothing of that
/// name; anything but a regular file is an error.
pub(crate) fn file_size(dir: BorrowedFd<'_>, name: &str) -> io::Result<Option<u64>> {
    match type_of(dir, name)? {
        None => Ok(None),
        Some((FileType::RegularFile, size)) => Ok(Some(size)),
        Some((found, _)) => Err(refused(found, false)),
    }
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

/// Writes `bytes` as the file `name` of `dir` through a temporary file (named
/// `.NAME.XXXXXXXXXXXX` + `temp_suffix`, [`temporary_name`], created exclusively, never
/// through a link) renamed
/// over it: a reader sees the old file or the new one, never part of one. With
/// `durable`, the file is synced before the rename and the directory after. The new
/// file has mode 0666 less the umask. A failure removes the temporary file.
pub(crate) fn write_file(
    dir: BorrowedFd<'_>,
    name: &str,
    bytes: &[u8],
    temp_suffix: &str,
    durable: bool,
) -> io::Result<()> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut attempts = 0;
    let (temp, fd) = loop {
        let temp = temporary_name(name, temp_suffix);
        match rustix::fs::openat(dir, temp.as_str(), flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => break (temp, fd),
            Err(rustix::io::Errno::EXIST) if attempts < 8 => attempts += 1,
            Err(e) => return Err(e.into()),
        }
    };
    let written = (|| {
        let mut file = File::from(fd);
        file.write_all(bytes)?;
        if durable {
            file.sync_all()?;
        }
        drop(file);
        rustix::fs::renameat(dir, temp.as_str(), dir, name)?;
        if durable {
            rustix::fs::fsync(dir)?;
        }
        Ok(())
    })();
    if written.is_err() {
        let _ = rustix::fs::unlinkat(dir, temp.as_str(), AtFlags::empty());
    }
    written
}

/// Removes the file `name` of `dir` (a link is removed, not what it points to);
/// `false` if there was nothing.
pub(crate) fn remove_file(dir: BorrowedFd<'_>, name: &str) -> io::Result<bool> {
    match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::NOENT) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Removes the directory `name` of `dir` if it is empty; `false` if it was not removed
/// (not empty, or not there).
pub(crate) fn remove_empty_dir(dir: BorrowedFd<'_>, name: &str) -> bool {
    rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR).is_ok()
}

/// The names in `dir` (`.` and `..` left out, names that are not UTF-8 too), each with
/// its type (a link's is [`FileType::Symlink`]).
pub(crate) fn entries(dir: BorrowedFd<'_>) -> io::Result<Vec<(String, FileType)>> {
    let mut out = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        if name == "." || name == ".." {
            continue;
        }
        let mut file_type = entry.file_type();
        if file_type == FileType::Unknown {
            // Some file systems do not say: ask.
            file_type = type_of(dir, name)?.map_or(FileType::Unknown, |(t, _)| t);
        }
        out.push((name.to_string(), file_type));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn mkfifo(path: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
    }

    #[test]
    fn special_files_and_links_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"not ours").unwrap();
        std::fs::write(dir.path().join("plain"), b"ours").unwrap();
        mkfifo(&dir.path().join("fifo"));
        let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("socket")).unwrap();
        symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
        symlink(outside.path(), dir.path().join("linkdir")).unwrap();
        let root = open_root(dir.path()).unwrap();
        let fd = root.as_fd();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut open_file(fd, "plain").unwrap().unwrap(), &mut text)
            .unwrap();
        assert_eq!(text, "ours");
        assert!(open_file(fd, "missing").unwrap().is_none());
        for (name, said) in [
            ("fifo", "a FIFO (named pipe) where a regular file belongs"),
            ("socket", "a socket where a regular file belongs"),
            ("link", "a symbolic link where a regular file belongs"),
        ] {
            let err = open_file(fd, name).unwrap_err().to_string();
            assert!(err.contains(said), "{name}: {err}");
            let err = file_size(fd, name).unwrap_err().to_string();
            assert!(err.contains(said), "{name}: {err}");
        }
        let null = open_root(Path::new("/dev")).unwrap();
        let err = open_file(null.as_fd(), "null").unwrap_err().to_string();
        assert!(err.contains("a character device"), "{err}");
        let err = open_dir(fd, "linkdir").unwrap_err().to_string();
        assert!(
            err.contains("a symbolic link where a directory belongs"),
            "{err}"
        );
        // Writing over a link replaces the link, never the file it points to.
        write_file(fd, "link", b"new", ".tmp", false).unwrap();
        assert_eq!(
            std::fs::read(outside.path().join("secret")).unwrap(),
            b"not ours"
        );
        assert_eq!(std::fs::read(dir.path().join("link")).unwrap(), b"new");
        // Removing a link to a directory removes the link.
        assert!(remove_file(fd, "linkdir").unwrap());
        assert!(outside.path().join("secret").exists());
        let mut names: Vec<String> = entries(fd).unwrap().into_iter().map(|(n, _)| n).collect();
        names.sort();
        assert_eq!(names, ["fifo", "link", "plain", "socket"]);
    }
}
