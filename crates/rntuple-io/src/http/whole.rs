//! A server that ignores byte ranges (it answers a `Range` request with the whole file,
//! HTTP 200: `python3 -m http.server`, some proxies and object gateways) is still read:
//! the first such answer is streamed once into a local copy (memory up to a limit, else
//! an anonymous temporary file, removed by the kernel whatever happens to the process),
//! and every later read of the source is served from it. The copy is made at most once
//! per source; the user is warned once per server and process why the read is slow, and
//! a [`TransferObserver`](crate::TransferObserver) watches the download (the
//! command line draws a progress bar).

use crate::error::{Error, Result};
use crate::Observer;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::sync::{Mutex, OnceLock, PoisonError};

/// Bytes read from the answer at a time.
const CHUNK: usize = 256 << 10;

/// Servers (`scheme://host:port`) this process warned about.
static WARNED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The local copy of a whole file.
pub(crate) struct WholeFile {
    storage: Storage,
    size: u64,
    /// Where it is kept, for messages.
    place: String,
}

enum Storage {
    Memory(Vec<u8>),
    /// Anonymous: its name was removed when it was made.
    File(std::fs::File),
}

impl WholeFile {
    /// The file's size.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// The bytes `offset..offset + len` (inside the file: checked by the source).
    pub(crate) fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        match &self.storage {
            Storage::Memory(data) => {
                Ok(crate::checked_slice(data, offset, len, &self.place)?.to_vec())
            }
            Storage::File(file) => {
                if offset.checked_add(len).is_none_or(|end| end > self.size) {
                    return Err(Error::Truncated {
                        what: self.place.clone(),
                        offset,
                        needed: len,
                        available: self.size.saturating_sub(offset),
                    });
                }
                let mut data = vec![0; crate::error::to_usize(len, &self.place)?];
                file.read_exact_at(&mut data, offset)
                    .map_err(|source| Error::Io {
                        what: self.place.clone(),
                        source,
                    })?;
                Ok(data)
            }
        }
    }
}

/// Why a copy could not be made.
pub(crate) enum FillError {
    /// Reading the answer failed (the error of the answer's reader: a timeout, a cut
    /// connection).
    Body(std::io::Error),
    /// The answer brought `got` bytes, `expected` were announced.
    Length { got: u64, expected: u64 },
    /// Keeping the copy failed (a full temporary directory).
    Local(Error),
}

/// The whole-file copy of one source: none until a server answered with the whole file.
pub(crate) struct Fallback {
    copy: OnceLock<WholeFile>,
    /// Held while a copy is made: other answers of the whole file wait, then use it.
    filling: Mutex<()>,
    observer: Option<Observer>,
    /// The most bytes kept in memory; a larger file goes to a temporary file.
    memory_max: u64,
}

impl Fallback {
    /// No copy yet; `observer` will watch the download, `memory_max` bounds the copy
    /// kept in memory.
    pub(crate) fn new(observer: Option<Observer>, memory_max: u64) -> Fallback {
        Fallback {
            copy: OnceLock::new(),
            filling: Mutex::new(()),
            observer,
            memory_max,
        }
    }

    /// The copy, once one was made.
    pub(crate) fn get(&self) -> Option<&WholeFile> {
        self.copy.get()
    }

    /// The copy, made from `body` (an answer with the whole file of `url`, `expected`
    /// bytes when its headers said) unless one exists: then `body` is dropped unread.
    /// The observer is warned about `server` (`scheme://host:port`) once per process.
    pub(crate) fn fill(
        &self,
        body: &mut dyn Read,
        expected: Option<u64>,
        url: &str,
        server: &str,
    ) -> std::result::Result<&WholeFile, FillError> {
        if let Some(copy) = self.copy.get() {
            return Ok(copy);
        }
        // Before the lock: the observer may wait for other locks (Python's).
        self.warn_once(url, server, expected);
        let _filling = self.filling.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(copy) = self.copy.get() {
            return Ok(copy);
        }
        let mut transfer = self.observer.as_ref().map(|o| o.0.transfer(url, expected));
        let mut sink = Sink::new(expected, self.memory_max, url).map_err(FillError::Local)?;
        let mut chunk = vec![0u8; CHUNK];
        // One byte past the announced length tells an answer longer than it said.
        let mut left = expected.map_or(u64::MAX, |n| n.saturating_add(1));
        while left > 0 {
            let want = usize::try_from(left).map_or(CHUNK, |l| l.min(CHUNK));
            let n = match body.read(&mut chunk[..want]) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(FillError::Body(e)),
            };
            sink.write(&chunk[..n], self.memory_max)
                .map_err(FillError::Local)?;
            left -= n as u64;
            if let Some(t) = transfer.as_mut() {
                t.advance(n as u64);
            }
        }
        drop(transfer);
        let got = sink.len;
        if let Some(expected) = expected.filter(|&n| n != got) {
            return Err(FillError::Length { got, expected });
        }
        let copy = sink.finish().map_err(FillError::Local)?;
        Ok(self.copy.get_or_init(|| copy))
    }

    /// Tells the observer, the first time for `server`, why reading `url` is slow.
    fn warn_once(&self, url: &str, server: &str, size: Option<u64>) {
        let Some(observer) = &self.observer else {
            return;
        };
        {
            let mut warned = WARNED.lock().unwrap_or_else(PoisonError::into_inner);
            if warned.iter().any(|s| s == server) {
                return;
            }
            warned.push(server.to_string());
        }
        let size = size.map_or_else(String::new, |n| format!(" ({n} bytes)"));
        observer.0.warning(&format!(
            "{url}: the server ignores byte ranges (it answers a Range request with the whole \
             file, HTTP 200), so the whole file{size} is downloaded before any of it is read, \
             and again every time it is opened; a server that answers Range requests with \
             HTTP 206, with several ranges and suffix ranges in one request (nginx, Apache, \
             XRootD's HTTP), reads only the bytes needed"
        ));
    }
}

/// Where the bytes of a copy go while it is made: memory, until it would pass the
/// limit, then an anonymous temporary file.
struct Sink {
    memory: Vec<u8>,
    file: Option<std::io::BufWriter<std::fs::File>>,
    len: u64,
    url: String,
}

impl Sink {
    fn new(expected: Option<u64>, memory_max: u64, url: &str) -> Result<Sink> {
        let mut sink = Sink {
            memory: Vec::new(),
            file: None,
            len: 0,
            url: url.to_string(),
        };
        match expected {
            Some(n) if n > memory_max => sink.spill()?,
            // At most the limit: reserved once.
            Some(n) => sink.memory.reserve_exact(usize::try_from(n).unwrap_or(0)),
            None => {}
        }
        Ok(sink)
    }

    fn write(&mut self, bytes: &[u8], memory_max: u64) -> Result<()> {
        if self.file.is_none() && self.len + bytes.len() as u64 > memory_max {
            self.spill()?;
        }
        match &mut self.file {
            Some(file) => file
                .write_all(bytes)
                .map_err(|e| local_error(&self.url, e))?,
            None => self.memory.extend_from_slice(bytes),
        }
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Moves the bytes kept in memory into a new anonymous temporary file.
    fn spill(&mut self) -> Result<()> {
        let file = tempfile::tempfile().map_err(|e| self.local_error(e))?;
        let mut file = std::io::BufWriter::with_capacity(1 << 20, file);
        file.write_all(&self.memory)
            .map_err(|e| self.local_error(e))?;
        self.memory = Vec::new();
        self.file = Some(file);
        Ok(())
    }

    fn local_error(&self, source: std::io::Error) -> Error {
        local_error(&self.url, source)
    }

    fn finish(self) -> Result<WholeFile> {
        let place = format!("the local copy of {}", self.url);
        let storage = match self.file {
            Some(file) => Storage::File(
                file.into_inner()
                    .map_err(|e| local_error(&self.url, e.into_error()))?,
            ),
            None => Storage::Memory(self.memory),
        };
        Ok(WholeFile {
            storage,
            size: self.len,
            place,
        })
    }
}

/// The error of keeping the copy of `url` in a temporary file.
fn local_error(url: &str, source: std::io::Error) -> Error {
    Error::Io {
        what: format!(
            "a temporary file in {} for the whole of {url} (set TMPDIR to a directory with \
             room for it)",
            std::env::temp_dir().display(),
        ),
        source,
    }
}
