//! XRootD (`root://`, `xroot://`; `roots://`, `xroots://` over TLS) byte source: a
//! native client of the XRootD protocol over TCP, without libXrdCl.
//!
//! Authentication, when the server asks: `unix`, and `ztn` (a WLCG bearer token, only
//! over TLS). TLS starts when the server answers `kXR_gotoTLS` to a client that wants it
//! (`roots://`); certificates are checked against the system's CAs.
//!
//! A source opens the file on the server (following redirects, as federations and EOS
//! send clients from a manager to a data server), learns the server's vector-read
//! limits, and reads with `kXR_read` (single ranges) and `kXR_readv` (many ranges, split
//! to the server's limits). It keeps a small pool of connections; a big call is spread
//! over several of them, each with several requests in flight. A broken connection is
//! re-established (session, open, same size checked) with the backoff of a
//! [`RetryPolicy`].

mod auth;
pub(crate) mod connection;
pub(crate) mod protocol;
mod tls;

#[cfg(test)]
mod tests;

use self::connection::{Answer, Call, Connection, Fault, Segment, Settings, Sink};
use self::protocol::{decode_query_config, error_code, Redirect, Request, StatInfo, XrdUrl};
use super::retry::Failure;
use super::{
    redact_url, ByteRange, IoMetrics, IoMetricsSnapshot, RangeBuffer, ReadAt, ReadHints,
    ReadRequest, RetryPolicy,
};
use crate::error::{to_usize, Error, RemoteKind, Result};
use crate::spare_buffers::SpareBuffers;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Redirects followed before giving up (a loop, or a misconfigured federation).
const MAX_REDIRECTS: u32 = 10;
/// Single reads larger than this are split, so that the pieces go over several
/// connections at once.
const READ_CHUNK_BYTES: u64 = 8 << 20;
/// Bytes asked for in one `kXR_readv`.
const MAX_READV_BYTES: u64 = 16 << 20;
/// Requests one connection takes from the shared queue at a time.
const BATCH_REQUESTS: usize = 4;
/// The protocol's documented vector-read limits (`XProtocol.hh`: `maxRvecsz` elements,
/// `maxRVdsz` bytes per element), used when the server does not tell.
const DEFAULT_READV_SEGMENTS: usize = 1024;
const DEFAULT_READV_SEGMENT_BYTES: u64 = 2 * 1024 * 1024 - 16;

/// How an [`XRootDSource`] connects and retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XRootDOptions {
    /// Timeouts, retries and backoff. The connect timeout bounds the TCP connection
    /// (per address) and the session's set-up that follows (TLS, handshake,
    /// `kXR_protocol`, login, authentication); the first-byte timeout the wait for the
    /// header of each response frame after a request was sent; the idle timeout every
    /// stall within a frame and every write. A timeout breaks the connection, which is
    /// opened again for the next attempt.
    pub retry: RetryPolicy,
    /// Connections to the server (the requests served at the same time).
    pub parallel_requests: usize,
}

impl Default for XRootDOptions {
    fn default() -> Self {
        XRootDOptions {
            retry: RetryPolicy::default(),
            parallel_requests: 4,
        }
    }
}

/// A file on an XRootD server.
pub struct XRootDSource {
    sessions: Arc<Sessions>,
    policy: RetryPolicy,
    size: u64,
    /// The file as the first session opened it: every later session must open the same.
    stat: StatInfo,
    readv_segments: usize,
    readv_segment_bytes: u64,
    parallel: usize,
    pool: Arc<Pool>,
    metrics: IoMetrics,
    spare: SpareBuffers,
}

/// How to open a session on the file: shared with the threads that open the pool's
/// connections ahead of use.
struct Sessions {
    /// The URL without credentials.
    name: String,
    url: XrdUrl,
    settings: Settings,
    /// Whether new sessions may send the open with the login (the first one needed no
    /// authentication).
    quick: AtomicBool,
}

impl std::fmt::Debug for XRootDSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XRootDSource")
            .field("name", &self.sessions.name)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl XRootDSource {
    /// Opens `url` (`root://host[:port]//path`) with the default options.
    pub fn open(url: &str) -> Result<Self> {
        Self::open_with(url, XRootDOptions::default())
    }

    /// Opens `url` with `options`.
    pub fn open_with(url: &str, options: XRootDOptions) -> Result<Self> {
        Self::open_configured(url, options, |_| {})
    }

    /// Opens `url` with `options`, after `configure` adjusted the connection settings.
    fn open_configured(
        url: &str,
        options: XRootDOptions,
        configure: impl FnOnce(&mut Settings),
    ) -> Result<Self> {
        let name = redact_url(url);
        let parsed = XrdUrl::parse(url)
            .ok_or_else(|| Error::InvalidArgument(format!("not a valid XRootD URL: {name}")))?;
        let mut settings = Settings {
            tls: parsed.tls,
            user: parsed.user.clone().unwrap_or_else(auth::login_name),
            network: options.retry.network,
            tls_config: None,
            token: None,
        };
        configure(&mut settings);
        let tls = settings.tls;
        let mut source = XRootDSource {
            sessions: Arc::new(Sessions {
                name,
                url: parsed,
                settings,
                quick: AtomicBool::new(false),
            }),
            policy: options.retry,
            size: 0,
            stat: StatInfo {
                id: None,
                size: 0,
                flags: 0,
                mtime: 0,
            },
            readv_segments: DEFAULT_READV_SEGMENTS,
            readv_segment_bytes: DEFAULT_READV_SEGMENT_BYTES,
            parallel: options.parallel_requests.max(1),
            pool: Arc::new(Pool::new(options.parallel_requests.max(1))),
            metrics: IoMetrics::default(),
            spare: SpareBuffers::default(),
        };
        let (conn, stat, limits) = source.policy.run(&source.sessions.name, |_| {
            // The readv limits are asked in the same write as the open.
            let query = Request::QueryConfig {
                names: "readv_iov_max readv_ior_max".into(),
            };
            let (conn, stat, answer) = source.sessions.open_session(None, None, Some(query))?;
            let limits = source.readv_limits(answer)?;
            Ok((conn, stat, limits))
        })?;
        source.size = stat.size;
        source.stat = stat;
        source
            .sessions
            .quick
            .store(!tls && !conn.authenticated, Ordering::Relaxed);
        if let Some((segments, bytes)) = limits {
            source.readv_segments = segments;
            source.readv_segment_bytes = bytes;
        }
        source.pool.release(Some(conn));
        source.open_spare_sessions();
        Ok(source)
    }

    /// Opens the pool's other connections in the background, so that the first
    /// parallel reads do not wait for their set-up (round trips each). A session that
    /// fails to open leaves its slot empty, to be opened when used.
    fn open_spare_sessions(&self) {
        for _ in 1..self.parallel {
            if !self.pool.take_empty() {
                return;
            }
            let (sessions, pool, stat) = (self.sessions.clone(), self.pool.clone(), self.stat);
            let spawned = std::thread::Builder::new()
                .name("rntuple-xrootd-session".into())
                .spawn(move || {
                    let opened = sessions.open_session(None, Some(stat), None).ok();
                    pool.release(opened.map(|(conn, _, _)| conn));
                });
            if spawned.is_err() {
                self.pool.release(None);
            }
        }
    }

    /// The vector-read limits the server announced in `answer` to the `kXR_query`
    /// config, if it did.
    fn readv_limits(
        &self,
        answer: Option<Answer>,
    ) -> std::result::Result<Option<(usize, u64)>, Failure> {
        let body = match answer {
            Some(Ok(body)) => body,
            // An old or restricted server: the documented defaults apply.
            None | Some(Err(Fault::Server(_))) => return Ok(None),
            Some(Err(other)) => return Err(self.sessions.failure(other)),
        };
        let values = decode_query_config(&body);
        let segments = values.first().copied().flatten().filter(|&v| v > 0);
        let bytes = values.get(1).copied().flatten().filter(|&v| v > 0);
        Ok(Some((
            segments.map_or(DEFAULT_READV_SEGMENTS, |v| v.min(1 << 16) as usize),
            bytes.map_or(DEFAULT_READV_SEGMENT_BYTES, |v| v.min(u64::from(u32::MAX))),
        )))
    }

    /// Runs `units` over as many pooled connections as useful, each pulling work from a
    /// shared queue; returns the first error.
    fn execute(&self, units: Vec<Unit<'_>>) -> Result<()> {
        if units.is_empty() {
            return Ok(());
        }
        let wanted = units.len().min(self.parallel);
        let queue = Mutex::new(VecDeque::from(units));
        let mut slots = vec![self.pool.acquire()];
        while slots.len() < wanted {
            match self.pool.try_acquire() {
                Some(slot) => slots.push(slot),
                None => break,
            }
        }
        let workers = slots.len();
        let abort = AtomicBool::new(false);
        let results: Vec<Result<()>> = if workers == 1 {
            vec![self.work(&mut slots[0], &queue, &abort, workers)]
        } else {
            std::thread::scope(|scope| {
                let (queue, abort) = (&queue, &abort);
                let mut rest = slots.iter_mut();
                let mine = rest.next();
                let handles: Vec<_> = rest
                    .map(|slot| scope.spawn(move || self.work(slot, queue, abort, workers)))
                    .collect();
                let mut results = Vec::with_capacity(workers);
                if let Some(slot) = mine {
                    results.push(self.work(slot, queue, abort, workers));
                }
                for h in handles {
                    results.push(h.join().unwrap_or_else(|_| {
                        Err(Error::Remote {
                            kind: RemoteKind::Other,
                            what: self.sessions.name.clone(),
                            detail: "a reader thread panicked".into(),
                        })
                    }));
                }
                results
            })
        };
        for slot in slots {
            self.pool.release(slot);
        }
        results.into_iter().collect()
    }

    /// One connection's share of a call: takes batches of units from `queue` until it
    /// is empty; a batch whose connection breaks is retried on a new connection.
    fn work(
        &self,
        slot: &mut Option<Connection>,
        queue: &Mutex<VecDeque<Unit<'_>>>,
        abort: &AtomicBool,
        workers: usize,
    ) -> Result<()> {
        let mut redirect: Option<Redirect> = None;
        let mut redirects = 0;
        loop {
            if abort.load(Ordering::Relaxed) {
                return Ok(());
            }
            if slot.is_none() && !lock(queue).is_empty() {
                // The session is opened before work is taken, so that the other
                // connections go on with the queue meanwhile.
                let opened = self.policy.run(&self.sessions.name, |_| {
                    self.sessions
                        .open_session(redirect.as_ref(), Some(self.stat), None)
                });
                match opened {
                    Ok((conn, _, _)) => *slot = Some(conn),
                    Err(e) => {
                        abort.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                }
            }
            let mut batch: Vec<Unit<'_>> = {
                let mut q = lock(queue);
                let take = q
                    .len()
                    .div_ceil(workers)
                    .clamp(1, BATCH_REQUESTS)
                    .min(q.len());
                q.drain(..take).collect()
            };
            if batch.is_empty() {
                return Ok(());
            }
            let outcome = self.policy.run(&self.sessions.name, |_| {
                if slot.is_none() {
                    let (conn, _, _) =
                        self.sessions
                            .open_session(redirect.as_ref(), Some(self.stat), None)?;
                    *slot = Some(conn);
                }
                let Some(conn) = slot.as_mut() else {
                    return Err(Failure::Transient {
                        kind: RemoteKind::Connection,
                        detail: "no connection".into(),
                        after: None,
                    });
                };
                let Some(handle) = conn.handle else {
                    *slot = None;
                    return Err(Failure::Transient {
                        kind: RemoteKind::Other,
                        detail: "the file is not open on this connection".into(),
                        after: None,
                    });
                };
                let pending: Vec<usize> = (0..batch.len()).filter(|&i| !batch[i].done()).collect();
                let mut calls: Vec<Call<'_>> = batch
                    .iter_mut()
                    .filter(|u| !u.done())
                    .map(|u| u.call(handle))
                    .collect();
                let result = conn.exchange(&mut calls, Some(&self.metrics));
                let finished: Vec<bool> = calls.iter().map(Call::is_done).collect();
                drop(calls);
                for (&i, done) in pending.iter().zip(finished) {
                    if done {
                        batch[i].set_done();
                    }
                }
                match result {
                    Ok(()) => Ok(()),
                    Err(Fault::Redirect(r)) => {
                        redirects += 1;
                        if redirects > MAX_REDIRECTS {
                            // A federation may settle: start again from the URL's host.
                            redirects = 0;
                            redirect = None;
                            if let Some(mut old) = slot.take() {
                                old.close_file();
                            }
                            return Err(Failure::Transient {
                                kind: RemoteKind::Other,
                                detail: format!(
                                    "more than {MAX_REDIRECTS} redirects while reading \
                                     (last to {}:{})",
                                    r.host, r.port
                                ),
                                after: None,
                            });
                        }
                        let detail = format!("redirected to {}:{} while reading", r.host, r.port);
                        if let Some(mut old) = slot.take() {
                            old.close_file();
                        }
                        redirect = Some(r);
                        Err(Failure::Transient {
                            kind: RemoteKind::Other,
                            detail,
                            after: Some(Duration::ZERO),
                        })
                    }
                    Err(
                        fault @ (Fault::Broken(..) | Fault::TimedOut { .. } | Fault::Violation(_)),
                    ) => {
                        *slot = None;
                        Err(self.sessions.failure(fault))
                    }
                    Err(fault) => Err(self.sessions.failure(fault)),
                }
            });
            if let Err(e) = outcome {
                abort.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
    }

    fn check_range(&self, offset: u64, len: u64) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Error::Truncated {
                what: format!("file {}", self.sessions.name),
                offset,
                needed: len,
                available: self.size.saturating_sub(offset),
            }),
        }
    }
}

/// How `now` differs from the file opened as `then`, if it does.
fn stat_change(then: &StatInfo, now: &StatInfo) -> Option<String> {
    if then.size != now.size {
        Some(format!(
            "its size was {} bytes, now {}",
            then.size, now.size
        ))
    } else if then.mtime != now.mtime {
        Some(format!(
            "its modification time was {}, now {}",
            then.mtime, now.mtime
        ))
    } else if then.id != now.id {
        Some("it is another file of the same size and time".to_string())
    } else {
        None
    }
}

impl XRootDSource {
    /// Reads `ranges` in `kXR_readv` requests of at most the server's segment size and
    /// count, into buffers reused from earlier reads.
    fn read_vectored(&self, ranges: &[ByteRange]) -> Result<Vec<Vec<u8>>> {
        for r in ranges {
            self.check_range(r.offset, r.len)?;
        }
        let mut outs: Vec<Vec<u8>> = ranges
            .iter()
            // Every byte is written by the read: a reused buffer is not zeroed again.
            .map(|r| Ok(self.spare.take_filled(to_usize(r.len, "an XRootD read")?)))
            .collect::<Result<_>>()?;
        // Every range in pieces of at most the server's segment size...
        let piece_len = to_usize(self.readv_segment_bytes.max(1), "an XRootD segment")?;
        let mut pieces: Vec<(u64, &mut [u8])> = Vec::new();
        for (r, out) in ranges.iter().zip(outs.iter_mut()) {
            let mut at = r.offset;
            for chunk in out.chunks_mut(piece_len) {
                let n = chunk.len() as u64;
                pieces.push((at, chunk));
                at += n;
            }
        }
        // ...and the pieces in requests of at most the server's segment count.
        let mut units: Vec<Unit<'_>> = Vec::new();
        let mut current: Vec<(u64, &mut [u8])> = Vec::new();
        let mut current_bytes = 0u64;
        for piece in pieces {
            let n = piece.1.len() as u64;
            if !current.is_empty()
                && (current.len() >= self.readv_segments || current_bytes + n > MAX_READV_BYTES)
            {
                units.push(Unit::ReadV {
                    pieces: std::mem::take(&mut current),
                    done: false,
                });
                current_bytes = 0;
            }
            current_bytes += n;
            current.push(piece);
        }
        if !current.is_empty() {
            units.push(Unit::ReadV {
                pieces: current,
                done: false,
            });
        }
        self.execute(units)?;
        Ok(outs)
    }
}

impl ReadAt for XRootDSource {
    fn name(&self) -> &str {
        &self.sessions.name
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        // Checked against the size the server reported before anything is allocated.
        self.check_range(offset, len)?;
        let mut out = vec![0u8; to_usize(len, "an XRootD read")?];
        let units: Vec<Unit<'_>> = out
            .chunks_mut(to_usize(READ_CHUNK_BYTES, "an XRootD read chunk")?)
            .scan(offset, |at, chunk| {
                let start = *at;
                *at += chunk.len() as u64;
                Some(Unit::Read {
                    offset: start,
                    out: chunk,
                    done: false,
                })
            })
            .collect();
        self.execute(units)?;
        Ok(out)
    }

    fn read(&self, request: ReadRequest<'_>) -> Result<Vec<RangeBuffer>> {
        request.serve(|b| self.spare.put_filled(b), |r| self.read_vectored(r))
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.metrics.snapshot()
    }

    fn profile(&self) -> super::SourceProfile {
        // The validators: the stat's id and modification time (seconds: a rewrite within
        // the same second keeps it, see `Freshness`).
        let id = self.stat.id.map_or_else(String::new, |id| id.to_string());
        super::SourceProfile {
            validators: super::Validators {
                etag: Some(format!(
                    "xrootd:{id}:{}:{}",
                    self.stat.size, self.stat.mtime
                )),
                modified: i64::try_from(self.stat.mtime).ok(),
                ..super::Validators::default()
            },
            ..super::SourceProfile::with_hints(ReadHints {
                max_range_bytes: self.readv_segment_bytes,
                max_ranges_per_request: self.readv_segments,
                max_request_bytes: MAX_READV_BYTES,
                parallel_requests: self.parallel,
                ..ReadHints::REMOTE
            })
        }
    }
}

impl Sessions {
    /// Connects, logs in and opens the file, following redirects; starts at `start`
    /// (a redirect received while reading) or at the URL's host. With `expected` (the
    /// first session's stat), a file of another size, modification time or id is an
    /// error: it changed since it was first opened, and each session reads the file it
    /// opened (a file replaced by a rename keeps the old one open).
    /// `also` goes out with the open (see [`Connection::open_file_and`]); its answer is
    /// returned.
    fn open_session(
        &self,
        start: Option<&Redirect>,
        expected: Option<StatInfo>,
        also: Option<Request>,
    ) -> std::result::Result<(Connection, StatInfo, Option<Answer>), Failure> {
        let base_path = self.url.path_with_opaque();
        let with_opaque = |opaque: &Option<String>| match opaque {
            Some(o) if base_path.contains('?') => format!("{base_path}&{o}"),
            Some(o) => format!("{base_path}?{o}"),
            None => base_path.clone(),
        };
        let (mut host, mut port, mut path) = match start {
            Some(r) => (r.host.clone(), r.port, with_opaque(&r.opaque)),
            None => (self.url.host.clone(), self.url.port, base_path.clone()),
        };
        for _ in 0..=MAX_REDIRECTS {
            // Once a first session needed no authentication, the next ones send their
            // open with the login.
            let early =
                (also.is_none() && self.quick.load(Ordering::Relaxed)).then_some(path.as_str());
            let opened = Connection::connect(&host, port, &self.settings, early).and_then(
                |(mut conn, early_answer)| match early_answer {
                    Some(Ok(body)) => conn.opened(&body).map(|stat| (conn, stat, None)),
                    Some(Err(fault)) => Err(fault),
                    None => conn
                        .open_file_and(&path, also.clone())
                        .map(|(stat, answer)| (conn, stat, answer)),
                },
            );
            match opened {
                Ok((conn, stat, answer)) => {
                    if stat.is_directory_or_special() {
                        let (kind, detail) = if stat.is_directory() {
                            (RemoteKind::IsADirectory, "a directory, not a file")
                        } else {
                            (RemoteKind::Other, "not a regular file")
                        };
                        return Err(Failure::Permanent(Error::remote(kind, &self.name, detail)));
                    }
                    if let Some(expected) = expected {
                        if let Some(change) = stat_change(&expected, &stat) {
                            return Err(Failure::Permanent(Error::Remote {
                                kind: RemoteKind::Changed,
                                what: self.name.clone(),
                                detail: format!(
                                    "the file changed at its origin since it was opened \
                                     ({change}): read it again"
                                ),
                            }));
                        }
                    }
                    return Ok((conn, stat, answer));
                }
                Err(Fault::Redirect(r)) => {
                    host = r.host;
                    port = r.port;
                    path = with_opaque(&r.opaque);
                }
                Err(other) => return Err(self.failure(other)),
            }
        }
        // A loop, or a federation still settling: tried again after the backoff.
        Err(Failure::Transient {
            kind: RemoteKind::Other,
            detail: format!("more than {MAX_REDIRECTS} redirects (last to {host}:{port})"),
            after: None,
        })
    }

    /// What a fault means for the retry loop.
    fn failure(&self, fault: Fault) -> Failure {
        let remote_of = |kind: RemoteKind, detail: String| {
            Failure::Permanent(Error::remote(kind, &self.name, detail))
        };
        let remote = |detail: String| remote_of(RemoteKind::Other, detail);
        // Server messages may quote the path with its opaque part (tokens).
        let fault = match fault {
            Fault::Server(mut e) => {
                e.message = self.scrub(&e.message);
                Fault::Server(e)
            }
            other => other,
        };
        match fault {
            Fault::Broken(kind, detail) => Failure::Transient {
                kind,
                detail,
                after: None,
            },
            Fault::TimedOut { kind, doing } => Failure::TimedOut { kind, doing },
            Fault::Server(e) if e.code == error_code::NOT_FOUND => remote_of(
                RemoteKind::NotFound,
                format!("no such file on the server ({e})"),
            ),
            Fault::Server(e) if e.is_transient() => Failure::Transient {
                kind: RemoteKind::Other,
                detail: format!("server error {e}"),
                after: None,
            },
            Fault::Server(e) => {
                let kind = match e.code {
                    error_code::NOT_AUTHORIZED | error_code::AUTH_FAILED => {
                        RemoteKind::PermissionDenied
                    }
                    error_code::IS_DIRECTORY => RemoteKind::IsADirectory,
                    _ => RemoteKind::Other,
                };
                remote_of(kind, format!("server error {e}"))
            }
            Fault::Tls(detail) => remote_of(RemoteKind::Tls, detail),
            Fault::Denied(detail) => remote_of(RemoteKind::PermissionDenied, detail),
            Fault::Redirect(r) => remote(format!("unexpected redirect to {}:{}", r.host, r.port)),
            Fault::Violation(detail) | Fault::Short(detail) => remote(detail),
            Fault::Unsupported(detail) => {
                Failure::Permanent(Error::Unsupported(format!("{}: {detail}", self.name)))
            }
        }
    }

    /// `text` without the values of the URL's query and without the bearer token.
    fn scrub(&self, text: &str) -> String {
        let mut secrets: Vec<String> = Vec::new();
        for pair in self.url.opaque.iter().flat_map(|o| o.split('&')) {
            if let Some((_, value)) = pair.split_once('=') {
                secrets.push(value.to_string());
                secrets.push(percent_decoded(value));
            }
        }
        secrets.extend(self.settings.token.iter().cloned());
        secrets.retain(|s| s.len() >= 4);
        // Longest first, so that a secret containing another is removed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.iter().fold(text.to_string(), |t, secret| {
            t.replace(secret.as_str(), "***")
        })
    }
}

impl Drop for XRootDSource {
    fn drop(&mut self) {
        for mut conn in self.pool.drain() {
            conn.close_file();
        }
    }
}

/// `text` with `%XX` escapes decoded (invalid ones kept as they are).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One request's worth of a call, with the caller's buffers it fills.
enum Unit<'a> {
    /// A `kXR_read` of `out.len()` bytes at `offset`.
    Read {
        offset: u64,
        out: &'a mut [u8],
        done: bool,
    },
    /// A `kXR_readv` of every piece.
    ReadV {
        pieces: Vec<(u64, &'a mut [u8])>,
        done: bool,
    },
}

impl Unit<'_> {
    fn done(&self) -> bool {
        match self {
            Unit::Read { done, .. } | Unit::ReadV { done, .. } => *done,
        }
    }

    fn set_done(&mut self) {
        match self {
            Unit::Read { done, .. } | Unit::ReadV { done, .. } => *done = true,
        }
    }

    fn call(&mut self, handle: protocol::FileHandle) -> Call<'_> {
        match self {
            Unit::Read { offset, out, .. } => Call::new(
                Request::Read {
                    handle,
                    offset: *offset,
                    // At most READ_CHUNK_BYTES (a few MiB).
                    #[allow(clippy::cast_possible_truncation)]
                    len: out.len() as u32,
                },
                Sink::Read {
                    out: &mut out[..],
                    filled: 0,
                },
            ),
            Unit::ReadV { pieces, .. } => Call::new(
                Request::ReadV {
                    handle,
                    // Each piece is at most the server's segment size (< 4 GiB).
                    #[allow(clippy::cast_possible_truncation)]
                    segments: pieces.iter().map(|(o, b)| (*o, b.len() as u32)).collect(),
                },
                Sink::ReadV(
                    pieces
                        .iter_mut()
                        .map(|(o, b)| Segment {
                            offset: *o,
                            out: &mut b[..],
                            done: false,
                        })
                        .collect(),
                ),
            ),
        }
    }
}

/// The connections of a source. A slot holds an open connection or `None` (to be
/// opened when used); there are `parallel_requests` slots.
struct Pool {
    slots: Mutex<Vec<Option<Connection>>>,
    freed: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere leaves the data consistent (slots and queues are plain lists).
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Pool {
    /// A pool of `size` empty slots, one of which the opener fills right away.
    fn new(size: usize) -> Self {
        Pool {
            slots: Mutex::new((1..size).map(|_| None).collect()),
            freed: Condvar::new(),
        }
    }

    fn take(slots: &mut Vec<Option<Connection>>) -> Option<Option<Connection>> {
        // Open connections first: opening a new one costs several round trips.
        match slots.iter().position(Option::is_some) {
            Some(i) => Some(slots.swap_remove(i)),
            None => slots.pop(),
        }
    }

    /// A slot, waiting until one is free.
    fn acquire(&self) -> Option<Connection> {
        let mut slots = lock(&self.slots);
        loop {
            if let Some(slot) = Self::take(&mut slots) {
                return slot;
            }
            slots = self
                .freed
                .wait(slots)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// Takes an empty slot (to open its connection) if there is one.
    fn take_empty(&self) -> bool {
        let mut slots = lock(&self.slots);
        match slots.iter().position(Option::is_none) {
            Some(i) => {
                slots.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// A slot if one is free now.
    fn try_acquire(&self) -> Option<Option<Connection>> {
        Self::take(&mut lock(&self.slots))
    }

    /// Gives a slot back.
    fn release(&self, slot: Option<Connection>) {
        lock(&self.slots).push(slot);
        self.freed.notify_one();
    }

    /// The slots in the pool now: `parallel_requests` once every session being
    /// opened in the background is back (for tests to wait on).
    #[cfg(test)]
    fn slots(&self) -> usize {
        lock(&self.slots).len()
    }

    /// Every open connection, leaving empty slots.
    fn drain(&self) -> Vec<Connection> {
        let mut slots = lock(&self.slots);
        let open: Vec<Connection> = slots.iter_mut().filter_map(Option::take).collect();
        open
    }
}
