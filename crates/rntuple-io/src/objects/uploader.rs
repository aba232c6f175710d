//! Puts that do not wait for the store: worker threads store the objects while the
//! writer goes on.

use super::{validate_key, ObjectStorage};
use crate::error::{Error, Result};
use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

/// How many puts an [`ObjectUploader`] runs at once, and how many bytes it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploaderOptions {
    /// Puts in flight at most (worker threads, started as needed). At least 1.
    pub max_in_flight: usize,
    /// Bytes of the objects queued or in flight at most: a put that would go past it
    /// waits (unless nothing else is pending, so one larger object still goes).
    pub max_pending_bytes: u64,
}

impl Default for UploaderOptions {
    /// 16 puts in flight (S3 serves many concurrent requests well; a put of a page costs
    /// a round trip more than its bytes), 256 MiB pending.
    fn default() -> Self {
        UploaderOptions {
            max_in_flight: 16,
            max_pending_bytes: 256 << 20,
        }
    }
}

/// Stores objects on worker threads (std threads, so any [`ObjectStorage`] works):
/// [`ObjectUploader::put`] returns once the object is queued, and waits only while
/// [`UploaderOptions::max_in_flight`] puts are pending or their bytes would exceed
/// [`UploaderOptions::max_pending_bytes`].
///
/// [`ObjectUploader::finish`] waits for every put and returns the first error (by the
/// order of the puts), naming the object. After an error, the objects still queued are
/// not stored and later puts fail at once. [`ObjectUploader::keys_written`] lists the
/// objects stored, [`ObjectUploader::keys_attempted`] those a put was started for
/// (what a failed write should delete: a put that failed may still have stored its
/// object, e.g. when the answer timed out).
///
/// Dropped without [`ObjectUploader::finish`], it stores nothing more: the queued
/// objects are dropped, and the drop waits for the puts in flight (bounded by the
/// backend's timeouts) and their threads.
pub struct ObjectUploader {
    shared: Arc<Shared>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

/// What the uploader and its workers share.
struct Shared {
    storage: Arc<dyn ObjectStorage>,
    options: UploaderOptions,
    state: Mutex<State>,
    /// Work was queued, or the uploader closed: for idle workers.
    work: Condvar,
    /// A put ended (or the queue was dropped): for callers waiting for room or the end.
    progress: Condvar,
}

/// One object to store.
struct Job {
    /// The order of its put, to report the first error.
    seq: u64,
    key: String,
    bytes: Vec<u8>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    /// Puts queued or in flight, and their bytes.
    pending: usize,
    pending_bytes: u64,
    /// Worker threads started, and those waiting for work.
    workers: usize,
    idle: usize,
    /// No more puts: finished or dropped.
    closed: bool,
    next_seq: u64,
    /// The error of the first failed put (by order of the puts), with its order.
    first_error: Option<(u64, Error)>,
    written: Vec<String>,
    attempted: Vec<String>,
}

impl State {
    /// Drops the queued jobs (after an error, or when the uploader is dropped).
    fn drop_queue(&mut self) {
        for job in self.queue.drain(..) {
            self.pending -= 1;
            self.pending_bytes -= job.bytes.len() as u64;
        }
    }

    /// The first error, for a caller: the error itself the first time, copies later.
    fn report_error(&mut self) -> Option<Error> {
        let (seq, error) = self.first_error.take()?;
        self.first_error = Some((seq, duplicate(&error)));
        Some(error)
    }

    /// A copy of the first error, leaving it for `finish`.
    fn copy_error(&self) -> Option<Error> {
        self.first_error.as_ref().map(|(_, e)| duplicate(e))
    }
}

impl std::fmt::Debug for ObjectUploader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("ObjectUploader")
            .field("storage", &self.shared.storage.name())
            .field("options", &self.shared.options)
            .field("pending", &state.pending)
            .field("written", &state.written.len())
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Counters and lists updated under the lock by code that does not panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, condvar: &Condvar, guard: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        condvar.wait(guard).unwrap_or_else(PoisonError::into_inner)
    }

    /// A worker: takes jobs until the uploader is closed and the queue empty.
    fn work(&self) {
        let mut state = self.lock();
        loop {
            if let Some(job) = state.queue.pop_front() {
                state.attempted.push(job.key.clone());
                drop(state);
                let len = job.bytes.len() as u64;
                let stored = self.store(&job.key, job.bytes);
                state = self.lock();
                state.pending -= 1;
                state.pending_bytes -= len;
                match stored {
                    Ok(()) => state.written.push(job.key),
                    Err(error) => {
                        if state
                            .first_error
                            .as_ref()
                            .is_none_or(|(seq, _)| job.seq < *seq)
                        {
                            state.first_error = Some((job.seq, error));
                        }
                        // Nothing more is stored after an error.
                        state.drop_queue();
                    }
                }
                self.progress.notify_all();
            } else if state.closed {
                state.workers -= 1;
                return;
            } else {
                state.idle += 1;
                state = self.wait(&self.work, state);
                state.idle -= 1;
            }
        }
    }

    /// Stores one object; the error names it, and a panicking backend is an error.
    fn store(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
        let object = || self.storage.object_name(key);
        let put = std::panic::catch_unwind(AssertUnwindSafe(|| self.storage.put(key, bytes)));
        match put {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.in_file(&object())),
            Err(_) => Err(Error::Write {
                what: format!("object {}", object()),
                source: std::io::Error::other("the store panicked while storing it"),
            }),
        }
    }
}

impl ObjectUploader {
    /// An uploader to `storage` with the default [`UploaderOptions`].
    pub fn new(storage: Arc<dyn ObjectStorage>) -> Self {
        Self::with_options(storage, UploaderOptions::default())
    }

    /// An uploader to `storage` with `options`.
    pub fn with_options(storage: Arc<dyn ObjectStorage>, options: UploaderOptions) -> Self {
        ObjectUploader {
            shared: Arc::new(Shared {
                storage,
                options: UploaderOptions {
                    max_in_flight: options.max_in_flight.max(1),
                    ..options
                },
                state: Mutex::new(State::default()),
                work: Condvar::new(),
                progress: Condvar::new(),
            }),
            workers: Mutex::new(Vec::new()),
        }
    }

    /// The store the objects go to.
    pub fn storage(&self) -> &Arc<dyn ObjectStorage> {
        &self.shared.storage
    }

    /// Queues `bytes` to be stored under `key` and returns, unless the puts pending
    /// are at their bounds: then it waits for room. An invalid key, an uploader already
    /// finished, or an earlier put that failed (its error) is an error at once.
    pub fn put(&self, key: impl Into<String>, bytes: Vec<u8>) -> Result<()> {
        let key = key.into();
        validate_key(&key)?;
        let len = bytes.len() as u64;
        let shared = &self.shared;
        let mut state = shared.lock();
        loop {
            if let Some(error) = state.copy_error() {
                return Err(error);
            }
            if state.closed {
                return Err(Error::InvalidArgument(format!(
                    "storing {}: the uploader was finished",
                    shared.storage.object_name(&key)
                )));
            }
            let full = state.pending >= shared.options.max_in_flight
                || (state.pending > 0
                    && state.pending_bytes.saturating_add(len) > shared.options.max_pending_bytes);
            if !full {
                break;
            }
            state = shared.wait(&shared.progress, state);
        }
        let seq = state.next_seq;
        state.next_seq += 1;
        state.pending += 1;
        state.pending_bytes += len;
        state.queue.push_back(Job { seq, key, bytes });
        // A worker for every queued job: started when none is idle.
        let start_worker = state.idle < state.queue.len() && state.workers < state.pending;
        if start_worker {
            state.workers += 1;
        }
        drop(state);
        shared.work.notify_one();
        if start_worker {
            self.start_worker()?;
        }
        Ok(())
    }

    fn start_worker(&self) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let started = std::thread::Builder::new()
            .name("rntuple-upload".into())
            .spawn(move || shared.work());
        match started {
            Ok(handle) => {
                self.workers
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(handle);
                Ok(())
            }
            Err(source) => {
                let mut state = self.shared.lock();
                state.workers -= 1;
                if state.workers > 0 {
                    // The others take the job.
                    return Ok(());
                }
                // No worker at all: the job would never run.
                state.drop_queue();
                self.shared.progress.notify_all();
                Err(Error::Write {
                    what: format!("{} (starting an upload thread)", self.shared.storage.name()),
                    source,
                })
            }
        }
    }

    /// Waits for every put queued, stops the workers, and returns the first error (by
    /// the order of the puts), which names its object. No put is taken afterwards.
    pub fn finish(&self) -> Result<()> {
        let shared = &self.shared;
        let mut state = shared.lock();
        state.closed = true;
        shared.work.notify_all();
        while state.pending > 0 {
            state = shared.wait(&shared.progress, state);
        }
        drop(state);
        self.join_workers();
        match shared.lock().report_error() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn join_workers(&self) {
        let workers =
            std::mem::take(&mut *self.workers.lock().unwrap_or_else(PoisonError::into_inner));
        for worker in workers {
            // A worker catches its backend's panics; nothing else in it panics.
            let _ = worker.join();
        }
    }

    /// The keys stored so far, sorted.
    pub fn keys_written(&self) -> Vec<String> {
        let mut keys = self.shared.lock().written.clone();
        keys.sort();
        keys
    }

    /// The keys whose put was started (stored, failed, or in flight), sorted: what to
    /// delete to undo a failed write.
    pub fn keys_attempted(&self) -> Vec<String> {
        let mut keys = self.shared.lock().attempted.clone();
        keys.sort();
        keys.dedup();
        keys
    }

    /// Bytes of the objects queued or in flight now.
    pub fn pending_bytes(&self) -> u64 {
        self.shared.lock().pending_bytes
    }
}

impl Drop for ObjectUploader {
    fn drop(&mut self) {
        {
            let mut state = self.shared.lock();
            state.closed = true;
            state.drop_queue();
        }
        self.shared.work.notify_all();
        self.shared.progress.notify_all();
        self.join_workers();
    }
}

/// A copy of `error` for a second caller (errors are not `Clone`): the same variant
/// and message where it can be; an I/O error keeps its kind and message.
fn duplicate(error: &Error) -> Error {
    let io = |source: &std::io::Error| std::io::Error::new(source.kind(), source.to_string());
    match error {
        Error::Io { what, source } => Error::Io {
            what: what.clone(),
            source: io(source),
        },
        Error::Write { what, source } => Error::Write {
            what: what.clone(),
            source: io(source),
        },
        Error::Remote { kind, what, detail } => Error::remote(*kind, what, detail),
        Error::NotFound(message) => Error::NotFound(message.clone()),
        Error::InvalidArgument(message) => Error::InvalidArgument(message.clone()),
        Error::Unsupported(message) => Error::Unsupported(message.clone()),
        Error::Truncated {
            what,
            offset,
            needed,
            available,
        } => Error::Truncated {
            what: what.clone(),
            offset: *offset,
            needed: *needed,
            available: *available,
        },
        Error::Corrupt { what, detail } => Error::corrupt(what, detail),
        Error::InFile { file, source } => Error::InFile {
            file: file.clone(),
            source: Box::new(duplicate(source)),
        },
        other => Error::Io {
            what: "storing an object".into(),
            source: std::io::Error::other(other.to_string()),
        },
    }
}
