//! Output files that appear only when complete.
//!
//! An [`AtomicFile`] is written as a temporary file beside its destination
//! (`NAME.XXXXXX.partial`, in the destination's directory so that the final rename stays
//! within one file system). [`AtomicFile::commit`] flushes it to disk and renames it over
//! the destination; dropped without a commit (an error, a panic unwinding), it removes
//! the temporary file, so the destination is exactly as it was. A process killed while
//! writing leaves the `.partial` file, which `rntuple recover` can read.
//!
//! Checkpoints ([`AtomicFile::flush_to_os`]) also start writing the bytes back to disk in
//! the background once enough have accumulated: the disk then works while the writer
//! goes on, the final sync at the commit has little left to do, and committed clusters
//! reach the disk early.

use crate::error::{Error, Result};
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::thread::JoinHandle;

/// A checkpoint starts a background write-back once this many bytes were written since
/// the last one was started.
const BACKGROUND_SYNC_BYTES: u64 = 64 << 20;

/// A thread that syncs the file's data to disk whenever asked; its result is the first
/// error it met.
#[derive(Debug)]
struct BackgroundSync {
    requests: SyncSender<()>,
    thread: JoinHandle<std::io::Result<()>>,
}

impl BackgroundSync {
    fn start(file: File) -> BackgroundSync {
        // One request waiting is enough: a sync started later covers every byte written
        // before it.
        let (requests, rx) = sync_channel::<()>(1);
        let thread = std::thread::spawn(move || {
            for () in rx {
                file.sync_data()?;
            }
            Ok(())
        });
        BackgroundSync { requests, thread }
    }
}

/// What to do when the destination of an [`AtomicFile`] already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Replace it (when the new file is complete).
    Replace,
    /// Refuse: an error at creation, and again at commit if the path appeared meanwhile.
    Refuse,
}

/// A file written under a temporary name and renamed over its destination on
/// [`AtomicFile::commit`]. See the module documentation.
#[derive(Debug)]
pub struct AtomicFile {
    /// The temporary file; `None` once committed.
    temp: Option<tempfile::NamedTempFile>,
    /// The temporary file's path (kept for messages after the commit).
    temp_path: PathBuf,
    /// Where the file goes: the destination with symbolic links resolved, so that the
    /// rename replaces the file a link points to and keeps the link.
    target: PathBuf,
    /// The destination as the caller named it, for messages.
    shown: PathBuf,
    existing: Existing,
    /// Bytes written since the last background write-back was started.
    unsynced: u64,
    /// The background write-back, started at the first checkpoint that needs it.
    syncer: Option<BackgroundSync>,
}

/// The file a path names, with symbolic links followed as far as they exist: a dangling
/// link names the path it points to.
fn resolve_links(path: &Path) -> PathBuf {
    let mut current = path.to_path_buf();
    // Bounded, as the kernel bounds link chains (ELOOP after 40).
    for _ in 0..40 {
        match std::fs::read_link(&current) {
            Ok(next) => {
                current = match current.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                };
            }
            Err(_) => break,
        }
    }
    current
}

impl AtomicFile {
    /// Starts writing `path`: creates the temporary file in its directory. With
    /// [`Existing::Refuse`], an existing `path` is an error.
    pub fn create(path: &Path, existing: Existing) -> Result<AtomicFile> {
        let target = resolve_links(path);
        let shown = path.to_path_buf();
        if existing == Existing::Refuse {
            refuse_existing(path)?;
        }
        if target.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "{} is a directory, not a file to write",
                shown.display()
            )));
        }
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| {
                Error::InvalidArgument(format!("{} names no file to write", shown.display()))
            })?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let temp = tempfile::Builder::new()
            .prefix(&format!("{name}."))
            .suffix(".partial")
            .rand_bytes(6)
            .permissions(default_permissions())
            .tempfile_in(&dir)
            .map_err(|e| Error::Write {
                what: format!(
                    "{} (cannot create a temporary file in {})",
                    shown.display(),
                    dir.display()
                ),
                source: e,
            })?;
        Ok(AtomicFile {
            temp_path: temp.path().to_path_buf(),
            temp: Some(temp),
            target,
            shown,
            existing,
            unsynced: 0,
            syncer: None,
        })
    }

    /// The destination, as the caller named it.
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// The temporary file being written.
    pub fn temp_path(&self) -> &Path {
        &self.temp_path
    }

    fn file(&mut self) -> std::io::Result<&mut File> {
        self.temp
            .as_mut()
            .map(|t| t.as_file_mut())
            .ok_or_else(|| std::io::Error::other("the file was already committed"))
    }

    /// Makes the bytes written so far durable and visible to other processes as they
    /// are (no rename): the temporary file is flushed to the operating system.
    pub fn flush_to_os(&mut self) -> Result<()> {
        let shown = self.shown.display().to_string();
        let write_err = |e| Error::Write {
            what: shown.clone(),
            source: e,
        };
        self.file().and_then(|f| f.flush()).map_err(write_err)?;
        if self.unsynced >= BACKGROUND_SYNC_BYTES {
            self.unsynced = 0;
            if self.syncer.is_none() {
                let file = self.file().and_then(|f| f.try_clone()).map_err(write_err)?;
                self.syncer = Some(BackgroundSync::start(file));
            }
            if let Some(syncer) = &self.syncer {
                match syncer.requests.try_send(()) {
                    // A request already waits: it will cover these bytes too.
                    Ok(()) | Err(TrySendError::Full(())) => {}
                    // The thread stopped on an error, reported at the commit.
                    Err(TrySendError::Disconnected(())) => {}
                }
            }
        }
        Ok(())
    }

    /// Completes the file: syncs it to disk, renames it over the destination (or, with
    /// [`Existing::Refuse`], only if the destination still does not exist), and syncs
    /// the directory so the rename itself survives a crash.
    pub fn commit(&mut self) -> Result<()> {
        let write_err = |what: String| move |e: std::io::Error| Error::Write { what, source: e };
        if let Some(syncer) = self.syncer.take() {
            drop(syncer.requests);
            let synced = syncer
                .thread
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the write-back thread panicked")));
            synced.map_err(write_err(format!(
                "{} (writing back to disk)",
                self.temp_path.display()
            )))?;
        }
        let temp = self
            .temp
            .take()
            .ok_or_else(|| Error::InvalidArgument("the file was already committed".into()))?;
        temp.as_file().sync_all().map_err(write_err(format!(
            "{} (syncing to disk)",
            self.temp_path.display()
        )))?;
        let persisted = match self.existing {
            Existing::Replace => temp.persist(&self.target),
            Existing::Refuse => temp.persist_noclobber(&self.target),
        };
        if let Err(e) = persisted {
            // The temporary file comes back with the error and is removed when dropped.
            let refused = e.error.kind() == std::io::ErrorKind::AlreadyExists;
            drop(e.file);
            return Err(if refused {
                Error::InvalidArgument(format!(
                    "{} appeared while it was being written (not replaced)",
                    self.shown.display()
                ))
            } else {
                Error::Write {
                    what: format!(
                        "{} (renaming {} over it)",
                        self.shown.display(),
                        self.temp_path.display()
                    ),
                    source: e.error,
                }
            });
        }
        if let Some(dir) = self.target.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            // Best effort: some file systems cannot sync a directory.
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file()?.write(buf)?;
        self.unsynced += n as u64;
        Ok(n)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.file()?.write_all(buf)?;
        self.unsynced += buf.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file()?.flush()
    }
}

impl Seek for AtomicFile {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.file()?.seek(pos)
    }
}

/// Permissions for a new output: read and write for everyone, less the umask (as
/// `File::create` does), not the owner-only permissions of temporary files.
fn default_permissions() -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::Permissions::from_mode(0o666)
}

/// Refuses an output `path` that exists (a file, a link, even a dangling one):
/// [`Error::OutputExists`]; a directory is an invalid argument saying so.
pub fn refuse_existing(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(_) if path.is_dir() => Err(Error::InvalidArgument(format!(
            "{} is a directory, not a file to write",
            path.display()
        ))),
        Ok(_) => Err(Error::OutputExists {
            path: path.display().to_string(),
        }),
        Err(_) => Ok(()),
    }
}

/// Refuses an output that is the same file as one of the inputs: same device and inode,
/// whatever the spelling (`./x`, `../d/x`, symbolic or hard links). Inputs that are URLs
/// or do not exist are not local files and cannot be the output.
pub fn ensure_distinct(output: &Path, inputs: &[&str]) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(out) = std::fs::metadata(output) else {
        return Ok(());
    };
    for input in inputs {
        let local = input.strip_prefix("file://").unwrap_or(input);
        if super::url_scheme(local).is_some() {
            continue;
        }
        if let Ok(meta) = std::fs::metadata(local) {
            if meta.dev() == out.dev() && meta.ino() == out.ino() {
                return Err(Error::InvalidArgument(format!(
                    "the output {} is the input {input} (the same file): writing it would destroy the input; choose another output path",
                    output.display()
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partials(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".partial"))
            .collect()
    }

    #[test]
    fn checkpoints_write_back_in_the_background_and_the_commit_waits_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.root");
        let mut file = AtomicFile::create(&path, Existing::Refuse).unwrap();
        let chunk: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        for k in 0..(BACKGROUND_SYNC_BYTES >> 20) + 3 {
            file.write_all(&chunk).unwrap();
            file.flush_to_os().unwrap();
            // The write-back starts at the first checkpoint past the threshold.
            assert_eq!(file.syncer.is_some(), k + 1 >= BACKGROUND_SYNC_BYTES >> 20);
        }
        file.commit().unwrap();
        assert!(file.syncer.is_none());
        let written = std::fs::read(&path).unwrap();
        assert_eq!(written.len() as u64, BACKGROUND_SYNC_BYTES + (3 << 20));
        assert!(written.chunks(1 << 20).all(|c| c == chunk.as_slice()));
        assert!(partials(dir.path()).is_empty());
    }

    #[test]
    fn the_destination_appears_only_at_commit() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.root");
        std::fs::write(&dest, b"old").unwrap();
        let mut f = AtomicFile::create(&dest, Existing::Replace).unwrap();
        f.write_all(b"new bytes").unwrap();
        let temp = f.temp_path().to_path_buf();
        let name = temp.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("out.root.") && name.ends_with(".partial"),
            "{name}"
        );
        assert_eq!(std::fs::read(&dest).unwrap(), b"old");
        assert_eq!(std::fs::read(&temp).unwrap(), b"new bytes");
        f.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"new bytes");
        assert!(partials(dir.path()).is_empty());
        assert!(f.commit().is_err(), "a second commit");
    }

    #[test]
    fn dropped_unfinished_leaves_the_destination_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.root");
        std::fs::write(&dest, b"old").unwrap();
        {
            let mut f = AtomicFile::create(&dest, Existing::Replace).unwrap();
            f.write_all(b"half").unwrap();
        }
        assert_eq!(std::fs::read(&dest).unwrap(), b"old");
        assert!(partials(dir.path()).is_empty());
    }

    #[test]
    fn refusing_to_replace() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.root");
        std::fs::write(&dest, b"old").unwrap();
        let err = AtomicFile::create(&dest, Existing::Refuse).unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err}");
        // A destination that appears while the file is written is not replaced either.
        let other = dir.path().join("other.root");
        let mut f = AtomicFile::create(&other, Existing::Refuse).unwrap();
        f.write_all(b"mine").unwrap();
        std::fs::write(&other, b"theirs").unwrap();
        let err = f.commit().unwrap_err();
        assert!(err.to_string().contains("appeared"), "{err}");
        assert_eq!(std::fs::read(&other).unwrap(), b"theirs");
        assert!(partials(dir.path()).is_empty());
    }

    #[test]
    fn a_symbolic_link_is_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.root");
        std::fs::write(&real, b"old").unwrap();
        let link = dir.path().join("link.root");
        std::os::unix::fs::symlink("real.root", &link).unwrap();
        let mut f = AtomicFile::create(&link, Existing::Replace).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
    }

    #[test]
    fn the_same_file_under_other_names_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.root");
        std::fs::write(&input, b"data").unwrap();
        let hard = dir.path().join("hard.root");
        std::fs::hard_link(&input, &hard).unwrap();
        let link = dir.path().join("link.root");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        let dotted = dir.path().join(".").join("in.root");
        let input_str = input.to_str().unwrap();
        for output in [&input, &hard, &link, &dotted] {
            let err = ensure_distinct(output, &[input_str]).unwrap_err();
            assert!(err.to_string().contains("is the input"), "{err}");
        }
        let other = dir.path().join("other.root");
        std::fs::write(&other, b"data").unwrap();
        ensure_distinct(&other, &[input_str, "root://host//in.root"]).unwrap();
        ensure_distinct(&dir.path().join("new.root"), &[input_str]).unwrap();
    }
}
