//! HTTP(S) byte source (`http://`, `https://`): byte-range requests on a keep-alive
//! connection pool (reqwest's client on rustls, on a small tokio runtime, both shared by
//! the sources open at the same time; callers block, on any thread).
//!
//! Timeouts ([`NetworkOptions`](crate::NetworkOptions)): the connect timeout bounds
//! a new connection's TCP connect and TLS handshake (reqwest's connect timeout); the
//! first-byte timeout the wait for a response's headers from the moment the request was
//! sent on a ready connection; the idle timeout every wait for the next bytes of a body
//! (see the `net` module for why reqwest's own timeouts do not do it); the low-speed
//! limit the pace of a whole body. A transfer that keeps moving fast enough never times
//! out.
//!
//! Opening asks for the file's first and last bytes in one multi-range request
//! (`Range: bytes=0-65535,-131072`), or for byte 0 alone ([`HttpSource::open_with`]).
//! The reply tells the size (from `Content-Range`), whether the server serves ranges,
//! and the validators (`ETag`, `Last-Modified`). Every later request is conditional on
//! them (`If-Match`, else `If-Unmodified-Since`) and every reply is checked against them
//! and the size, so a file replaced on the server is an error, never a mix of old and
//! new bytes.
//!
//! Servers as they are: a server that does not serve both ends in one multi-range reply
//! (it refuses the request with 400, 416 or 501, sends the whole file, or one range)
//! gets two single-range requests at once (`bytes=0-65535` and `bytes=-131072`); one
//! that refuses the suffix range gets `bytes=SIZE-131072-...` once the first reply told
//! the size (from `Content-Range`, else a `HEAD`). A server that ignores ranges (HTTP
//! 200 with the whole file) has the whole file streamed once into a local copy that
//! serves every read (the `whole` module), with one warning that says why this is
//! slow. What a server refuses is remembered for the other files of that server read at
//! the same time.
//!
//! Many ranges go in one multi-range request whose `multipart/byteranges` reply is
//! parsed as a stream (the `multipart` module). A server that answers such a request
//! with the whole file (HTTP 200) or with fewer bytes than asked is remembered, and from
//! then on gets parallel single-range requests.

mod auth;
pub(crate) mod multipart;
mod open;
mod servers;
mod whole;

use super::net::{first_byte, reqwest_kind, within_limits, NetRuntime, NoFirstByte, TrackConnects};
use super::range_spans::Spans;
use super::retry::Failure;
use super::spare_buffers::SpareBuffers;
use super::speed::SpeedMeter;
use super::version::parse_http_date;
use super::{
    redact_url, ByteRange, Edges, IoMetrics, IoMetricsSnapshot, Observer, RangeBuffer, ReadAt,
    ReadHints, ReadRequest, RetryPolicy, SourceProfile, TimeoutKind, Validators,
};
use crate::error::{to_usize, Error, RemoteKind, Result};
use bytes::Bytes;
use multipart::{Limits, MultipartError, Part};
use open::Probe;
use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Client, RequestBuilder, StatusCode};
use servers::{Probed, Refusals};
use std::io::{BufReader, ErrorKind, Read};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// The most bytes after the last multipart boundary that are read (and dropped) to keep
/// the connection reusable; a longer epilogue closes the connection instead.
const MAX_EPILOGUE: u64 = 4 << 10;
/// The longest wait a server's `Retry-After` may ask for.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// Worker threads of a source's runtime: they drive sockets and TLS, never decode.
const RUNTIME_WORKERS: usize = 2;
/// The most bytes of a file that ignores ranges kept in memory (else a temporary file).
const WHOLE_IN_MEMORY: u64 = 64 << 20;

/// How an [`HttpSource`] connects and reads.
#[derive(Clone)]
pub struct HttpOptions {
    /// Timeouts, retries and backoff (see the module documentation for what each
    /// timeout bounds).
    pub retry: RetryPolicy,
    /// A token sent as `Authorization: Bearer ...` (unless the URL holds user:password).
    pub bearer_token: Option<String>,
    /// How reads are shaped: ranges per request, requests in flight.
    pub hints: ReadHints,
    /// Who watches the download of a file from a server that ignores byte ranges, and
    /// hears the warning that says why it is slow.
    pub observer: Option<Observer>,
    /// The most bytes of such a file kept in memory; a larger one is kept in an
    /// anonymous temporary file (default 64 MiB).
    pub whole_in_memory: u64,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            retry: RetryPolicy::default(),
            bearer_token: None,
            hints: ReadHints::REMOTE,
            observer: None,
            whole_in_memory: WHOLE_IN_MEMORY,
        }
    }
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("retry", &self.retry)
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "***"))
            .field("hints", &self.hints)
            .field("observer", &self.observer)
            .field("whole_in_memory", &self.whole_in_memory)
            .finish()
    }
}

impl HttpOptions {
    /// The defaults, with the bearer token found as WLCG tools find it: `BEARER_TOKEN`,
    /// the file `BEARER_TOKEN_FILE` names, or `$XDG_RUNTIME_DIR/bt_u<uid>` (else
    /// `/tmp/bt_u<uid>`).
    pub fn from_env() -> Result<HttpOptions> {
        Ok(HttpOptions {
            bearer_token: auth::bearer_token_from_env()?,
            ..HttpOptions::default()
        })
    }
}

/// Who the requests say they are.
enum Credentials {
    /// `user:password@` from the URL.
    Basic {
        user: String,
        password: Option<String>,
    },
    /// `Authorization: Bearer ...` (a sensitive header value).
    Bearer(HeaderValue),
}

/// A file served over HTTP(S), read with byte-range requests.
pub struct HttpSource {
    /// The URL without credentials (they are in `credentials`).
    url: reqwest::Url,
    /// The URL for messages: no credentials, no query.
    display: String,
    /// The client, its connection pool and runtime, shared by the sources open at once.
    net: Arc<SharedClient>,
    credentials: Option<Credentials>,
    size: u64,
    /// The version opened: every reply must name the same.
    version: Validators,
    retry: RetryPolicy,
    hints: ReadHints,
    /// Set once the server answered a multi-range request with something else than the
    /// ranges: later reads use single-range requests.
    multi_range_refused: AtomicBool,
    /// Ranges per multi-range request; lowered when the server refuses a request as too
    /// large (a Range header longer than its header limit).
    ranges_per_request: AtomicUsize,
    metrics: IoMetrics,
    /// Buffers given back for reuse.
    spare: SpareBuffers,
    /// The local copy of the whole file, once the server answered a range request with
    /// it: then every read is served from it.
    whole: whole::Fallback,
}

/// An HTTP client and the runtime that drives its connections, shared by every source
/// open at the same time on the same server (scheme, host and port) with the same
/// connect timeout: a file opened while another is read (a chain of files, a merge's
/// next input) reuses the connections to its server, without a new TCP (and TLS)
/// handshake. The last source of a server to go drops both, and with them the
/// connections (never kept open for the sources of another server).
struct SharedClient {
    client: Client,
    /// What the server refuses, learnt from the files of it read so far.
    refuses: Refusals,
    /// Declared after the client, so dropped after it.
    runtime: NetRuntime,
}

/// What sources share a client: the server's origin (`scheme://host:port`) and the
/// connect timeout.
type ClientKey = (String, Duration);

/// The clients in use (weak: they live as long as their sources).
static SHARED_CLIENTS: Mutex<Vec<(ClientKey, Weak<SharedClient>)>> = Mutex::new(Vec::new());

impl SharedClient {
    /// The client in use for `key`, else a new one made by `build` on a new runtime
    /// (`display`: the URL, for messages).
    fn get(
        key: ClientKey,
        display: &str,
        build: impl FnOnce() -> reqwest::Result<Client>,
    ) -> Result<Arc<SharedClient>> {
        let mut clients = SHARED_CLIENTS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        clients.retain(|(_, client)| client.strong_count() > 0);
        if let Some(shared) = clients
            .iter()
            .filter(|(in_use, _)| *in_use == key)
            .find_map(|(_, client)| client.upgrade())
        {
            return Ok(shared);
        }
        let runtime = NetRuntime::new(RUNTIME_WORKERS, "rntuple-http", display)?;
        // The client's pool spawns its connections on the current runtime.
        let client = {
            let _context = runtime.handle().enter();
            build()
        }
        .map_err(|e| {
            Error::remote(
                RemoteKind::Other,
                display,
                format!(
                    "cannot set up the HTTP client: {}",
                    describe_reqwest_error(e)
                ),
            )
        })?;
        let shared = Arc::new(SharedClient {
            client,
            refuses: Refusals::default(),
            runtime,
        });
        clients.push((key, Arc::downgrade(&shared)));
        Ok(shared)
    }
}

/// A response whose headers arrived: its body is read (blocking) chunk by chunk, each
/// chunk awaited at most the idle timeout, the whole body paced by the low-speed limit.
struct Answer<'a> {
    response: reqwest::Response,
    /// What is left of the chunk being read.
    chunk: Bytes,
    runtime: &'a NetRuntime,
    idle: Duration,
    /// The body's low-speed limit, from its headers on.
    meter: SpeedMeter,
}

/// A timeout ran out while a body was read (the cause of an `io::Error`): the idle
/// timeout or the low-speed limit.
#[derive(Debug)]
struct BodyTimeout(TimeoutKind);

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the {} ran out", self.0.name())
    }
}

impl std::error::Error for BodyTimeout {}

impl Answer<'_> {
    fn status(&self) -> StatusCode {
        self.response.status()
    }

    fn headers(&self) -> &HeaderMap {
        self.response.headers()
    }

    fn content_length(&self) -> Option<u64> {
        self.response.content_length()
    }
}

impl Read for Answer<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let timed_out = |kind| std::io::Error::new(ErrorKind::TimedOut, BodyTimeout(kind));
        while self.chunk.is_empty() {
            let (response, idle, meter) = (&mut self.response, self.idle, &self.meter);
            let next = self
                .runtime
                .block_on(async { within_limits(response.chunk(), idle, meter).await });
            match next {
                Err(kind) => return Err(timed_out(kind)),
                Ok(Err(e)) => {
                    // The kind travels in the io::Error's kind (see `body_failure`).
                    let kind = reqwest_kind(&e).io_error_kind();
                    return Err(std::io::Error::new(kind, describe_reqwest_error(e)));
                }
                Ok(Ok(None)) => return Ok(0),
                Ok(Ok(Some(chunk))) => {
                    self.meter
                        .record(chunk.len() as u64)
                        .map_err(|_| timed_out(TimeoutKind::LowSpeed))?;
                    self.chunk = chunk;
                }
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        self.chunk = self.chunk.slice(n..);
        Ok(n)
    }
}

impl std::fmt::Debug for HttpSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSource")
            .field("url", &self.display)
            .field("size", &self.size)
            .field("version", &self.version)
            .field(
                "multi_range_refused",
                &self.multi_range_refused.load(Ordering::Relaxed),
            )
            .finish_non_exhaustive()
    }
}

/// What came back for a request of some ranges.
enum Reply {
    /// The bytes of each range, and the body bytes transferred.
    Ranges { data: Vec<Vec<u8>>, body_bytes: u64 },
    /// A valid answer that does not hold the ranges (the whole file, or fewer bytes).
    Unusable(String),
}

/// How the body of a 206 (or 200) reply is laid out.
enum Layout {
    /// One run of bytes of the file.
    Single { first: u64, last: u64 },
    /// `multipart/byteranges` with this boundary.
    Multipart(String),
}

/// How one multi-range request ended.
enum BatchOutcome {
    Done(Vec<Vec<u8>>),
    /// The server does not serve these ranges in one request: fetch them one by one.
    Fallback,
}

/// A reader that counts the bytes going through it (the body bytes of a reply).
struct CountingReader<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

/// `e` and its causes, without the URL (which may hold a query with credentials).
fn describe_reqwest_error(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        let part = c.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cause = c.source();
    }
    text
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The wait a `Retry-After: SECONDS` header asks for (the date form is left to the
/// backoff).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds: u64 = header_str(headers, header::RETRY_AFTER)?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds).min(MAX_RETRY_AFTER))
}

/// `bytes=a-b,c-d,...` for `ranges` (none empty).
fn range_header(ranges: &[ByteRange]) -> String {
    let mut text = String::from("bytes=");
    for (i, r) in ranges.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!("{}-{}", r.offset, r.offset + r.len - 1));
    }
    text
}

/// The ranges to put on the wire for `ranges`: the non-empty ones sorted, with
/// overlapping ones merged (a server may coalesce overlapping ranges, and each wire
/// range must map to one part). Touching ranges stay apart: merging them would make
/// ranges of any size, past `max_request_bytes`, on one connection.
fn wire_ranges(ranges: &[ByteRange]) -> Spans {
    Spans::group(ranges, |wire, next| next.offset < wire.offset + wire.len)
}

/// Runs `task(0..count)` on at most `threads` threads; the results in index order, or
/// the error of the lowest failed index (no new task starts after a failure).
fn run_parallel<T: Send>(
    count: usize,
    threads: usize,
    task: impl Fn(usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    if count <= 1 || threads <= 1 {
        return (0..count).map(task).collect();
    }
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Vec<Mutex<Option<Result<T>>>> = (0..count).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.min(count) {
            scope.spawn(|| {
                while !failed.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        break;
                    }
                    let result = task(i);
                    if result.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    *slots[i]
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(result);
                }
            });
        }
    });
    let results: Vec<Option<Result<T>>> = slots
        .into_iter()
        .map(|s| {
            s.into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        })
        .collect();
    let mut out = Vec::with_capacity(count);
    let mut missing = false;
    for result in results {
        match result {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => return Err(e),
            None => missing = true,
        }
    }
    if missing {
        // Only a failure stops tasks from starting, and it was returned above.
        return Err(Error::InvalidArgument(
            "parallel reads stopped without an error".into(),
        ));
    }
    Ok(out)
}

impl HttpSource {
    /// A `GET` of `range` (a Range header value) with the credentials and the
    /// conditions on the file's identity.
    fn request(&self, range: &str) -> RequestBuilder {
        let mut request = self
            .net
            .client
            .get(self.url.clone())
            .header(header::RANGE, range)
            .header(header::ACCEPT_ENCODING, "identity");
        request = self.with_credentials(request);
        // If-Match compares strongly: a weak ETag never matches, so use the date then.
        match (&self.version.etag, &self.version.last_modified) {
            (Some(etag), _) if !etag.starts_with("W/") => {
                request = request.header(header::IF_MATCH, etag.as_str());
            }
            (_, Some(date)) => {
                request = request.header(header::IF_UNMODIFIED_SINCE, date.as_str());
            }
            _ => {}
        }
        request
    }

    /// `request` with the credentials.
    fn with_credentials(&self, request: RequestBuilder) -> RequestBuilder {
        match &self.credentials {
            Some(Credentials::Basic { user, password }) => {
                request.basic_auth(user, password.as_ref())
            }
            Some(Credentials::Bearer(value)) => {
                request.header(header::AUTHORIZATION, value.clone())
            }
            None => request,
        }
    }

    /// Sends `request` and waits for its headers: at most the first-byte timeout once
    /// its connection is ready (a new connection: at most the connect timeout).
    fn send(
        &self,
        request: RequestBuilder,
        doing: &str,
    ) -> std::result::Result<Answer<'_>, Failure> {
        let network = self.retry.network;
        let sent = self
            .net
            .runtime
            .block_on(async { first_byte(request.send(), network.first_byte_timeout).await });
        let response = match sent {
            Ok(Ok(response)) => response,
            Err(NoFirstByte) => {
                return Err(Failure::TimedOut {
                    kind: TimeoutKind::FirstByte,
                    doing: doing.to_string(),
                })
            }
            Ok(Err(e)) if e.is_connect() && e.is_timeout() => {
                return Err(Failure::TimedOut {
                    kind: TimeoutKind::Connect,
                    doing: format!("{doing}: connecting"),
                })
            }
            Ok(Err(e)) => {
                let kind = reqwest_kind(&e);
                // A certificate that does not verify will not verify on the next attempt.
                let permanent = e.is_builder() || e.is_redirect() || kind == RemoteKind::Tls;
                let detail = format!("{doing}: {}", describe_reqwest_error(e));
                return Err(if permanent {
                    self.permanent_of(kind, detail)
                } else {
                    Failure::Transient {
                        kind,
                        detail,
                        after: None,
                    }
                });
            }
        };
        Ok(Answer {
            response,
            chunk: Bytes::new(),
            runtime: &self.net.runtime,
            idle: network.idle_timeout,
            meter: SpeedMeter::start(&network),
        })
    }

    /// What an error reading the body of a reply while `doing` something means: the
    /// idle timeout, or another fault that may pass.
    fn body_failure(&self, doing: &str, e: std::io::Error) -> Failure {
        if let Some(BodyTimeout(kind)) = e.get_ref().and_then(|i| i.downcast_ref::<BodyTimeout>()) {
            return Failure::TimedOut {
                kind: *kind,
                doing: format!("{doing}: reading the reply"),
            };
        }
        Failure::Transient {
            kind: RemoteKind::of_connection_error(e.kind()),
            detail: format!("{doing}: reading the reply: {e}"),
            after: None,
        }
    }

    /// A failure that will not pass (a reply that does not hold what was asked for).
    fn permanent(&self, detail: String) -> Failure {
        self.permanent_of(RemoteKind::Other, detail)
    }

    /// A failure of `kind` that will not pass.
    fn permanent_of(&self, kind: RemoteKind, detail: String) -> Failure {
        Failure::Permanent(Error::remote(kind, &self.display, detail))
    }

    /// The file was replaced at the server (`how`: what tells it): its bytes are never
    /// mixed with the version opened.
    fn changed(&self, how: String) -> Failure {
        self.permanent_of(
            RemoteKind::Changed,
            format!("the file changed at its origin while being read ({how}): read it again"),
        )
    }

    /// The failure an unexpected HTTP status means.
    fn status_failure(&self, response: &Answer<'_>, doing: &str) -> Failure {
        let status = response.status();
        match status.as_u16() {
            404 | 410 => self.permanent_of(RemoteKind::NotFound, format!("{doing}: HTTP {status}")),
            401 | 403 => {
                let hint = match self.credentials {
                    None => {
                        "no credentials were sent (BEARER_TOKEN, BEARER_TOKEN_FILE, \
                             or user:password in the URL)"
                    }
                    Some(_) => "the credentials were refused",
                };
                self.permanent_of(
                    RemoteKind::PermissionDenied,
                    format!("{doing}: access denied (HTTP {status}); {hint}"),
                )
            }
            412 => self.changed(format!("HTTP {status} to a request conditional on it")),
            408 | 429 | 500..=599 => Failure::Transient {
                kind: RemoteKind::Other,
                detail: format!("{doing}: HTTP {status}"),
                after: retry_after(response.headers()),
            },
            _ => self.permanent(format!("{doing}: unexpected HTTP {status}")),
        }
    }

    /// Checks that a reply is about the same file as the one opened, unencoded.
    fn check_reply_headers(&self, headers: &HeaderMap) -> std::result::Result<(), Failure> {
        // Every reply names the version it was cut from (RFC 9110, 15.3.7): the one
        // opened, or the bytes are another file's. A reply that names none cannot be
        // told apart from a rewrite.
        let pairs = [
            ("ETag", &self.version.etag, header::ETAG),
            (
                "Last-Modified",
                &self.version.last_modified,
                header::LAST_MODIFIED,
            ),
        ];
        for (name, ours, header) in pairs {
            match (ours, header_str(headers, header)) {
                (Some(ours), Some(theirs)) if ours != theirs => {
                    return Err(self.changed(format!("{name} {ours} became {theirs}")));
                }
                (Some(ours), None) => {
                    return Err(self.changed(format!(
                        "a reply without the {name} it was opened with, {ours}: the server \
                         no longer tells which version it sends"
                    )));
                }
                _ => {}
            }
        }
        self.check_encoding(headers)
    }

    /// Refuses a reply whose bytes are encoded (compressed): this client asks for the
    /// bytes as they are (`Accept-Encoding: identity`), and an encoded body does not
    /// hold the file's bytes at the offsets asked for.
    fn check_encoding(&self, headers: &HeaderMap) -> std::result::Result<(), Failure> {
        let Some(encoding) = header_str(headers, header::CONTENT_ENCODING).map(str::trim) else {
            return Ok(());
        };
        if encoding.is_empty() || encoding.eq_ignore_ascii_case("identity") {
            return Ok(());
        }
        Err(self.permanent(format!(
            "the server sent the file compressed (Content-Encoding: {encoding}) although this \
             client asked for its bytes as they are (Accept-Encoding: identity), so the bytes \
             are not the file's; turn the compression off for this file on the server or on \
             the proxy in front of it (nginx: gzip off, or gzip_types without its type)"
        )))
    }

    /// Reads the reply to a request of `wanted` (sorted, disjoint, none empty).
    fn read_reply(
        &self,
        response: Answer<'_>,
        wanted: &[ByteRange],
        doing: &str,
    ) -> std::result::Result<Reply, Failure> {
        let (Some(first_wanted), Some(last_wanted)) = (wanted.first(), wanted.last()) else {
            return Ok(Reply::Ranges {
                data: Vec::new(),
                body_bytes: 0,
            });
        };
        let whole_file = [ByteRange {
            offset: 0,
            len: self.size,
        }];
        let status = response.status();
        match status {
            StatusCode::PARTIAL_CONTENT => {}
            // The whole file is fine when the whole file was asked for.
            StatusCode::OK if wanted == whole_file => {}
            // Several ranges: the server does not serve them in one request.
            StatusCode::OK if wanted.len() > 1 => {
                return Ok(Reply::Unusable(
                    "the server answered with the whole file (HTTP 200)".into(),
                ))
            }
            // One range: the server ignores ranges.
            StatusCode::OK => return self.reply_from_copy(response, wanted, doing),
            _ => return Err(self.status_failure(&response, doing)),
        }
        let headers = response.headers();
        self.check_reply_headers(headers)?;
        let limits = Limits::for_request(wanted);
        let layout = if status == StatusCode::OK {
            Layout::Single {
                first: 0,
                last: self.size.saturating_sub(1),
            }
        } else if let Some(boundary) =
            header_str(headers, header::CONTENT_TYPE).and_then(multipart::boundary_of)
        {
            Layout::Multipart(boundary)
        } else {
            let (first, last, total) = header_str(headers, header::CONTENT_RANGE)
                .and_then(multipart::parse_content_range)
                .ok_or_else(|| {
                    self.permanent(format!("{doing}: a reply without a valid Content-Range"))
                })?;
            if total != Some(self.size) {
                let total = total.map_or("unknown".to_string(), |t| t.to_string());
                return Err(self.changed(format!("size {} became {total}", self.size)));
            }
            let covers =
                first <= first_wanted.offset && last_wanted.offset + last_wanted.len - 1 <= last;
            if !covers {
                return Ok(Reply::Unusable(format!(
                    "the server sent only bytes {first}-{last}"
                )));
            }
            if last - first + 1 > limits.max_data_bytes {
                return Ok(Reply::Unusable(format!(
                    "the server sent bytes {first}-{last}, far more than requested"
                )));
            }
            Layout::Single { first, last }
        };
        let transient = |e: std::io::Error| self.body_failure(doing, e);
        let mut body = BufReader::with_capacity(
            64 << 10,
            CountingReader {
                inner: response,
                count: 0,
            },
        );
        let mut parts = match layout {
            Layout::Single { first, last } => {
                let len = last - first + 1;
                // Bounded by the requested bytes (checked above, or the whole file).
                // Every byte is written by the read (a reused buffer is not zeroed
                // first, as read_to_end would).
                let mut data = self
                    .spare
                    .take_filled(to_usize(len, doing).map_err(Failure::Permanent)?);
                let mut got = 0;
                while got < data.len() {
                    match body.read(&mut data[got..]) {
                        Ok(0) => break,
                        Ok(n) => got += n,
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) => {
                            self.spare.put_filled(data);
                            return Err(transient(e));
                        }
                    }
                }
                if got < data.len() {
                    self.spare.put_filled(data);
                    return Err(Failure::Transient {
                        kind: RemoteKind::ConnectionReset,
                        detail: format!("{doing}: the reply ended after {got} of {len} bytes"),
                        after: None,
                    });
                }
                let mut extra = [0u8; 1];
                if body.read(&mut extra).map_err(transient)? != 0 {
                    return Err(self
                        .permanent(format!("{doing}: the reply is longer than its {len} bytes")));
                }
                vec![Part { start: first, data }]
            }
            Layout::Multipart(boundary) => {
                let take = |len: usize| self.spare.take_filled(len);
                let parts =
                    multipart::read_parts(&mut body, &boundary, wanted, self.size, limits, &take)
                        .map_err(|e| match e {
                        MultipartError::Io(e) => transient(e),
                        MultipartError::SizeChanged { claimed } => {
                            self.changed(format!("size {} became {claimed}", self.size))
                        }
                        MultipartError::Malformed(m) => {
                            self.permanent(format!("{doing}: bad multipart/byteranges reply: {m}"))
                        }
                    })?;
                // Let the connection be reused: read the (short) epilogue.
                std::io::copy(&mut body.by_ref().take(MAX_EPILOGUE), &mut std::io::sink())
                    .map_err(transient)?;
                parts
            }
        };
        let data = multipart::assemble(wanted, &mut parts)
            .map_err(|m| self.permanent(format!("{doing}: {m}")))?;
        // Parts that were cut rather than moved: their buffers serve again.
        for part in parts {
            self.spare.put_filled(part.data);
        }
        Ok(Reply::Ranges {
            data,
            body_bytes: body.get_ref().count,
        })
    }

    /// Reads one range (not empty, inside the file) with one request (from the copy of
    /// the whole file, once there is one).
    fn fetch_single(&self, range: ByteRange) -> Result<Vec<u8>> {
        if let Some(copy) = self.whole.get() {
            return copy.read_at(range.offset, range.len);
        }
        let start = Instant::now();
        let last = range.offset + range.len - 1;
        let doing = format!("reading bytes {}-{last}", range.offset);
        let header = range_header(&[range]);
        let (mut data, body_bytes) = self.retry.run(&self.display, |_| {
            let response = self.send(self.request(&header), &doing)?;
            match self.read_reply(response, &[range], &doing)? {
                Reply::Ranges { data, body_bytes } => Ok((data, body_bytes)),
                Reply::Unusable(why) => Err(self.permanent(format!("{doing}: {why}"))),
            }
        })?;
        self.metrics.record(false, 1, body_bytes, start);
        data.pop().ok_or_else(|| Error::Remote {
            kind: RemoteKind::Other,
            what: self.display.clone(),
            detail: format!("{doing}: no data"),
        })
    }

    /// Reads `ranges` (sorted, disjoint, none empty) with one request each, at most
    /// `parallel_requests` at a time.
    fn fetch_singles(&self, ranges: &[ByteRange]) -> Result<Vec<Vec<u8>>> {
        run_parallel(ranges.len(), self.hints.parallel_requests, |i| {
            self.fetch_single(ranges[i])
        })
    }

    /// Reads `batch` (sorted, disjoint, none empty, more than one) with one multi-range
    /// request; a request refused as too large is split in halves (and later requests
    /// are made smaller).
    fn fetch_batch(&self, batch: &[ByteRange]) -> Result<BatchOutcome> {
        if batch.len() == 1 {
            return Ok(BatchOutcome::Done(vec![self.fetch_single(batch[0])?]));
        }
        let start = Instant::now();
        let bytes: u64 = batch.iter().map(|r| r.len).sum();
        let doing = format!("reading {} ranges ({bytes} bytes)", batch.len());
        let header = range_header(batch);
        let (reply, body_bytes) = self.retry.run(&self.display, |_| {
            let response = self.send(self.request(&header), &doing)?;
            // Header limits: nginx says 400, others 413, 414 or 431.
            if matches!(response.status().as_u16(), 400 | 413 | 414 | 431) {
                return Ok((None, 0));
            }
            match self.read_reply(response, batch, &doing)? {
                Reply::Ranges { data, body_bytes } => Ok((Some(Ok(data)), body_bytes)),
                Reply::Unusable(why) => Ok((Some(Err(why)), 0)),
            }
        })?;
        self.metrics
            .record(true, batch.len() as u64, body_bytes, start);
        match reply {
            Some(Ok(data)) => Ok(BatchOutcome::Done(data)),
            Some(Err(_why)) => {
                self.multi_range_refused.store(true, Ordering::Relaxed);
                Ok(BatchOutcome::Fallback)
            }
            None => {
                let half = batch.len() / 2;
                self.ranges_per_request.fetch_min(half, Ordering::Relaxed);
                let mut data = Vec::with_capacity(batch.len());
                for part in [&batch[..half], &batch[half..]] {
                    match self.fetch_batch(part)? {
                        BatchOutcome::Done(d) => data.extend(d),
                        BatchOutcome::Fallback => data.extend(self.fetch_singles(part)?),
                    }
                }
                Ok(BatchOutcome::Done(data))
            }
        }
    }

    /// Reads `wire` (sorted, disjoint, none empty) in multi-range requests of at most
    /// `ranges_per_request` ranges and `max_request_bytes` bytes, in parallel; the
    /// batches a server refuses to serve that way are read range by range.
    fn fetch_multi(&self, wire: &[ByteRange]) -> Result<Vec<Vec<u8>>> {
        let max_ranges = self.ranges_per_request.load(Ordering::Relaxed).max(1);
        let max_bytes = self.hints.max_request_bytes.max(1);
        let mut batches: Vec<&[ByteRange]> = Vec::new();
        let mut begin = 0;
        let mut bytes = 0u64;
        for (i, r) in wire.iter().enumerate() {
            let n = i - begin;
            if n > 0 && (n >= max_ranges || bytes + r.len > max_bytes) {
                batches.push(&wire[begin..i]);
                begin = i;
                bytes = 0;
            }
            bytes += r.len;
        }
        batches.push(&wire[begin..]);
        let outcomes = run_parallel(batches.len(), self.hints.parallel_requests, |i| {
            self.fetch_batch(batches[i])
        })?;
        let mut fallback = Vec::new();
        for (batch, outcome) in batches.iter().zip(&outcomes) {
            if matches!(outcome, BatchOutcome::Fallback) {
                fallback.extend_from_slice(batch);
            }
        }
        let mut fallback_data = self.fetch_singles(&fallback)?.into_iter();
        let mut out = Vec::with_capacity(wire.len());
        for (batch, outcome) in batches.iter().zip(outcomes) {
            match outcome {
                BatchOutcome::Done(data) => out.extend(data),
                BatchOutcome::Fallback => out.extend(fallback_data.by_ref().take(batch.len())),
            }
        }
        Ok(out)
    }

    fn check_bounds(&self, offset: u64, len: u64) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Error::Truncated {
                what: self.display.clone(),
                offset,
                needed: len,
                available: self.size.saturating_sub(offset),
            }),
        }
    }
}

/// The validators of a reply: `ETag`, `Last-Modified` (also as seconds) and the
/// server's clock (`Date`).
fn reply_validators(headers: &HeaderMap) -> Validators {
    let last_modified = header_str(headers, header::LAST_MODIFIED).map(str::to_string);
    Validators {
        etag: header_str(headers, header::ETAG).map(str::to_string),
        modified: last_modified.as_deref().and_then(parse_http_date),
        last_modified,
        answered: header_str(headers, header::DATE).and_then(parse_http_date),
        etag_follows_content: false,
    }
}

impl HttpSource {
    /// Reads `ranges`: adjacent ones as one span, the spans in one multi-range request
    /// (or one request each, from a server that refuses those).
    fn read_vectored(&self, ranges: &[ByteRange]) -> Result<Vec<Vec<u8>>> {
        for r in ranges {
            self.check_bounds(r.offset, r.len)?;
        }
        if let Some(copy) = self.whole.get() {
            return ranges
                .iter()
                .map(|r| copy.read_at(r.offset, r.len))
                .collect();
        }
        let grouped = wire_ranges(ranges);
        let wire = &grouped.spans;
        let wire_data = match wire.len() {
            0 => Vec::new(),
            1 => vec![self.fetch_single(wire[0])?],
            _ if self.multi_range_refused.load(Ordering::Relaxed) => self.fetch_singles(wire)?,
            _ => self.fetch_multi(wire)?,
        };
        let fault = |detail: String| Error::Remote {
            kind: RemoteKind::Other,
            what: self.display.clone(),
            detail,
        };
        if wire_data.len() != wire.len() {
            return Err(fault(format!(
                "{} of {} ranges came back",
                wire_data.len(),
                wire.len()
            )));
        }
        grouped
            .split(ranges, wire_data)
            .ok_or_else(|| fault("a range came back short".to_string()))
    }
}

impl ReadAt for HttpSource {
    fn name(&self) -> &str {
        &self.display
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        self.check_bounds(offset, len)?;
        if len == 0 {
            return Ok(Vec::new());
        }
        self.fetch_single(ByteRange { offset, len })
    }

    fn read(&self, request: ReadRequest<'_>) -> Result<Vec<RangeBuffer>> {
        request.serve(|b| self.spare.put_filled(b), |r| self.read_vectored(r))
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.metrics.snapshot()
    }

    fn profile(&self) -> SourceProfile {
        // A copy of the whole file (made when opening met a server that ignores ranges)
        // is read as a local one.
        let hints = match self.whole.get() {
            Some(_) => ReadHints::LOCAL,
            None => self.hints,
        };
        SourceProfile {
            validators: self.version.clone(),
            ..SourceProfile::with_hints(hints)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::NetworkOptions;

    fn r(offset: u64, len: u64) -> ByteRange {
        ByteRange { offset, len }
    }

    #[test]
    fn sources_share_a_client_only_with_sources_of_their_server_alive_at_once() {
        let source = |url: &str| HttpSource::client_for(url, HttpOptions::default()).unwrap();
        let a = source("http://127.0.0.1:9/a.root");
        let b = source("http://127.0.0.1:9/dir/b.root?x=1");
        let other_port = source("http://127.0.0.1:10/a.root");
        let other_scheme = source("https://127.0.0.1:9/a.root");
        assert!(Arc::ptr_eq(&a.net, &b.net));
        assert!(!Arc::ptr_eq(&a.net, &other_port.net));
        assert!(!Arc::ptr_eq(&a.net, &other_scheme.net));
        let slower = HttpSource::client_for(
            "http://127.0.0.1:9/c.root",
            HttpOptions {
                retry: RetryPolicy {
                    network: NetworkOptions {
                        connect_timeout: Duration::from_secs(99),
                        ..NetworkOptions::default()
                    },
                    ..RetryPolicy::default()
                },
                ..HttpOptions::default()
            },
        )
        .unwrap();
        assert!(!Arc::ptr_eq(&a.net, &slower.net));
        // When the sources of a server are gone, so is its client (and its connections).
        let client = Arc::downgrade(&other_port.net);
        drop(other_port);
        assert!(client.upgrade().is_none());
        let shared = Arc::downgrade(&a.net);
        drop(a);
        assert!(shared.upgrade().is_some(), "b still uses it");
        drop(b);
        assert!(shared.upgrade().is_none());
    }

    #[test]
    fn wire_ranges_merge_overlaps_keep_neighbours_apart_and_skip_empty_ones() {
        let asked = [
            r(100, 10),
            r(0, 5),
            r(5, 5),
            r(50, 0),
            r(105, 2),
            r(200, 1),
            r(3, 4),
        ];
        let Spans {
            spans: wire,
            span_of: index_of,
        } = wire_ranges(&asked);
        assert_eq!(wire, vec![r(0, 10), r(100, 10), r(200, 1)]);
        assert_eq!(
            index_of,
            vec![Some(1), Some(0), Some(0), None, Some(1), Some(2), Some(0)]
        );
        assert_eq!(range_header(&wire), "bytes=0-9,100-109,200-200");
        let wire = wire_ranges(&[r(0, 5), r(5, 5), r(10, 5)]).spans;
        assert_eq!(wire, vec![r(0, 5), r(5, 5), r(10, 5)]);
    }

    #[test]
    fn run_parallel_keeps_order_and_reports_the_first_error() {
        let squares = run_parallel(50, 4, |i| Ok(i * i)).unwrap();
        assert_eq!(squares, (0..50).map(|i| i * i).collect::<Vec<_>>());
        let err = run_parallel(50, 4, |i| {
            if i == 7 {
                Err(Error::NotFound(format!("task {i}")))
            } else {
                Ok(i)
            }
        })
        .unwrap_err();
        assert!(err.to_string().contains("task 7"), "{err}");
    }

    #[test]
    fn options_never_print_the_token() {
        let options = HttpOptions {
            bearer_token: Some("sekrit-token".into()),
            ..HttpOptions::default()
        };
        assert!(!format!("{options:?}").contains("sekrit"));
    }
}
