//! Objects in S3 or an S3-compatible store (MinIO, Ceph, moto): `s3://bucket/key`.
//!
//! Reads are ranged `GET`s made by the `object_store` crate's S3 client, over a reqwest
//! client (rustls) of this module's (see [`S3Connector`]). `object_store` is async; an
//! [`S3Source`] owns a small tokio runtime (two worker threads) and blocks its callers on
//! channels, never inside the runtime, so any number of threads (rayon workers
//! included) may read from one source at once.
//!
//! # Configuration: environment variables
//!
//! [`S3Source::open`] reads the `AWS_*` environment variables as
//! `object_store::aws::AmazonS3Builder::from_env` does; the ones that matter here:
//!
//! | variable | meaning |
//! |---|---|
//! | `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` | static credentials |
//! | `AWS_SESSION_TOKEN` (or `AWS_TOKEN`) | the token of temporary credentials |
//! | `AWS_REGION`, else `AWS_DEFAULT_REGION` | the bucket's region (default `us-east-1`) |
//! | `AWS_ENDPOINT_URL` or `AWS_ENDPOINT`, `AWS_ENDPOINT_URL_S3` | a custom endpoint (MinIO, Ceph, moto, ...) |
//! | `AWS_ALLOW_HTTP=true` | allow `http://` endpoints (default: HTTPS only) |
//! | `AWS_VIRTUAL_HOSTED_STYLE_REQUEST` | `true`: `https://bucket.host/key`; `false`: `https://host/bucket/key` |
//! | `AWS_SKIP_SIGNATURE=true` | anonymous requests (public buckets) |
//! | `AWS_WEB_IDENTITY_TOKEN_FILE`, `AWS_ROLE_ARN`, `AWS_CONTAINER_CREDENTIALS_*` | other credential sources |
//! | `AWS_PROXY_URL`, `AWS_PROXY_EXCLUDES`, `AWS_PROXY_CA_CERTIFICATE` | an HTTP proxy |
//!
//! Timeouts and retries are the [`NetworkOptions`](crate::NetworkOptions) of the
//! source's [`RetryPolicy`], as for every remote source (`AWS_TIMEOUT` and
//! `AWS_CONNECT_TIMEOUT` are not used): the connect timeout bounds a new connection's TCP
//! connect and TLS handshake, the first-byte timeout the wait for the response headers of
//! the `HEAD` and of each `GET` once its connection is ready, the idle timeout every
//! wait for the next chunk of a `GET`'s body, the low-speed limit the pace of the whole
//! body.
//!
//! Without static credentials the client falls back to the other AWS credential sources,
//! ending with the EC2 instance metadata service. Addressing: with a custom endpoint,
//! requests are path-style (what MinIO, Ceph and moto need) unless
//! `AWS_VIRTUAL_HOSTED_STYLE_REQUEST=true` (then the endpoint must already name the
//! bucket, e.g. `https://bucket.minio.example`); against AWS itself they are
//! virtual-hosted (AWS's recommended form), except for bucket names with dots, which
//! the `*.s3.amazonaws.com` certificate does not cover.
//!
//! # Retries, consistency, errors
//!
//! Faults that may pass (no connection, a timeout, a cut body, HTTP 5xx, 408, 429) are
//! retried as the [`RetryPolicy`] says, like every remote source; after a fault, only
//! the ranges still missing are asked for again. Opening asks for the size and ETag (`HEAD`); every later `GET`
//! carries `If-Match: <ETag>`, so an object replaced while being read is an error, never
//! a mix of two versions. Failures are [`Error::Remote`]s of their [`RemoteKind`]: a
//! missing bucket or key is [`RemoteKind::NotFound`], a refusal (HTTP 401 or 403:
//! `AccessDenied`, `InvalidAccessKeyId`, `SignatureDoesNotMatch`)
//! [`RemoteKind::PermissionDenied`]. Messages never hold the secret key, the session
//! token or a request signature: server replies are reduced to their status and S3
//! error code and message, and any credential value left is masked.
//!
//! # Counting
//!
//! S3 has no multi-range `GET`: [`S3Source::read_ranges`] issues one ranged `GET` per
//! range, up to [`ReadHints::parallel_requests`] at a time, and each `GET` counts as one
//! request of one range. `vector_requests` counts only real multi-range requests, so it
//! stays 0 here. Ranges are not coalesced by this source (the read planner above
//! merges neighbours, following [`S3Source::hints`]), so the counters are exact. The
//! `HEAD` made when opening is not counted, like a local file's `stat`: `requests` is
//! the number of (non-empty) ranges read.

use super::net::{first_byte, reqwest_kind, within_limits, NetRuntime, NoFirstByte};
use super::range_spans::Spans;
use super::retry::Failure;
use super::speed::SpeedMeter;
use super::{
    redact_url, Edges, IoMetrics, IoMetricsSnapshot, NetworkOptions, RangeBuffer, ReadAt,
    ReadHints, ReadRequest, RetryPolicy, TimeoutKind,
};
use crate::error::{to_usize, Error, RemoteKind, Result};
use crate::ByteRange;
use futures_util::StreamExt;
use object_store::aws::AmazonS3;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange, GetResult, ObjectMeta, ObjectStore, ObjectStoreExt};
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

/// Worker threads of a source's runtime: they only drive sockets, never decode, so
/// two are plenty for the parallel requests of [`S3_HINTS`].
pub(crate) const RUNTIME_WORKERS: usize = 2;

/// The longest an error detail gets; server replies can be long.
const MAX_DETAIL_CHARS: usize = 400;

/// How reads from S3 should be shaped.
///
/// A `GET` costs a round trip of tens of milliseconds before its first byte (and a
/// fee), while one connection streams 50-100 MB/s: reading up to 1 MiB of unneeded
/// bytes costs about as much as another request, so gaps up to 1 MiB are read through
/// (within the same 5% waste cap as other remote sources, so selective reads stay
/// selective). S3 has no multi-range `GET`, so a planned request is one range: up to 16
/// MiB (AWS's advice for ranged reads), with 16 in flight: an object store serves
/// concurrent requests well (SeaweedFS on loopback: every field of a 524 MB file in
/// 1.46 s with 8, 1.27 s with 16), far below S3's request-rate limits (thousands per
/// second per prefix).
pub(crate) const S3_HINTS: ReadHints = ReadHints {
    merge_gap: 1 << 20,
    max_waste: 0.05,
    max_range_bytes: 16 << 20,
    max_ranges_per_request: 1,
    max_request_bytes: 16 << 20,
    parallel_requests: 16,
    ..ReadHints::REMOTE
};

/// Small `GET`s in flight at once: the page lists of a file of many cluster groups (a
/// few KB each, one `GET` each, as S3 has no multi-range request) are read in about one
/// round trip, not one per [`S3_HINTS`]' parallel requests.
const SMALL_GETS_IN_FLIGHT: usize = 64;

/// How many of `ranges`' `GET`s go out at once: [`SMALL_GETS_IN_FLIGHT`] when they are
/// small (under 1 MiB on average), else the planned parallel requests.
fn parallel_gets(ranges: &[(usize, ByteRange)]) -> usize {
    let bytes: u64 = ranges.iter().map(|(_, r)| r.len).sum();
    let small = (bytes / ranges.len().max(1) as u64) < (1 << 20);
    if small && ranges.len() > S3_HINTS.parallel_requests {
        SMALL_GETS_IN_FLIGHT
    } else {
        S3_HINTS.parallel_requests
    }
}

/// Small ranges closer than this are read in one `GET` (with the bytes between them):
/// reading 64 KiB costs less than a request (its round trip and the server's work),
/// while the `GET`s of ranges farther apart go out at once anyway.
const COALESCE_GAP: u64 = 64 << 10;
/// A `GET` of coalesced small ranges stops growing at this many bytes.
const COALESCE_MAX: u64 = 8 << 20;

/// The non-empty `ranges` as the `GET`s that read them: sorted, with ranges that
/// overlap or lie within [`COALESCE_GAP`] of each other in one span of at most
/// [`COALESCE_MAX`] bytes (a single larger range is a span of its own).
fn coalesce(ranges: &[ByteRange]) -> Spans {
    Spans::group(ranges, |span, next| {
        let end = (span.offset + span.len).max(next.offset + next.len);
        next.offset <= span.offset + span.len + COALESCE_GAP && end - span.offset <= COALESCE_MAX
    })
}

/// An object in S3 (or an S3-compatible store) opened for reading.
pub struct S3Source {
    shared: Arc<Shared>,
    size: u64,
    policy: RetryPolicy,
    // Declared last; shuts the runtime down when the source is dropped.
    runtime: NetRuntime,
}

/// What the requests running on the runtime need.
struct Shared {
    /// `s3://bucket/key`, credentials removed: for messages.
    name: String,
    store: AmazonS3,
    path: ObjectPath,
    /// The ETag the object had when opened, required of every `GET`.
    etag: Option<String>,
    metrics: IoMetrics,
    /// Credential values to mask in any message, should one slip into a server reply.
    secrets: Vec<String>,
    /// Timeouts.
    network: NetworkOptions,
}

impl std::fmt::Debug for S3Source {
    // Not derived: the client's own Debug would print its credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Source")
            .field("name", &self.shared.name)
            .field("size", &self.size)
            .field("etag", &self.shared.etag)
            .finish_non_exhaustive()
    }
}

impl S3Source {
    /// Opens `s3://bucket/key`, configured by the `AWS_*` environment variables (see
    /// the module documentation), with the default timeouts and retries
    /// ([`RetryPolicy::default`]).
    pub fn open(url: &str) -> Result<Self> {
        let aws_vars = crate::credentials::aws_variables();
        Self::open_with(url, aws_vars, RetryPolicy::default())
    }

    /// The client of `s3://bucket/key` and its runtime, before any request.
    fn client(
        url: &str,
        aws_vars: impl IntoIterator<Item = (String, String)>,
        policy: RetryPolicy,
    ) -> Result<(Shared, NetRuntime)> {
        let name = redact_url(url);
        let (bucket, key) = parse_s3_url(url, &name)?;
        let aws_vars: Vec<(String, String)> = aws_vars.into_iter().collect();
        let secrets = secret_values(&aws_vars);
        let path = ObjectPath::parse(key).map_err(|e| {
            Error::InvalidArgument(format!("{name}: the key is not a valid S3 key ({e})"))
        })?;

        let runtime = NetRuntime::new(RUNTIME_WORKERS, "rntuple-s3", &name)?;
        let handle = runtime.handle().clone();
        let store = {
            // The HTTP client may spawn its connection tasks on the current runtime.
            let _entered = handle.enter();
            s3_builder(bucket, &aws_vars, policy)
                .build()
                .map_err(|e| Error::Remote {
                    kind: RemoteKind::Other,
                    what: name.clone(),
                    detail: format!(
                        "configuring the S3 client: {}",
                        scrub(&e.to_string(), &secrets)
                    ),
                })?
        };
        let shared = Shared {
            name,
            store,
            path,
            etag: None,
            metrics: IoMetrics::default(),
            secrets,
            network: policy.network,
        };
        Ok((shared, runtime))
    }

    /// Opens `s3://bucket/key` with the given `AWS_*` settings instead of the
    /// environment (same names, e.g. `("AWS_REGION", "eu-west-1")`) and retry policy.
    pub fn open_with(
        url: &str,
        aws_vars: impl IntoIterator<Item = (String, String)>,
        policy: RetryPolicy,
    ) -> Result<Self> {
        let (mut shared, runtime) = Self::client(url, aws_vars, policy)?;
        let handle = runtime.handle().clone();
        // Not counted in the metrics, like a local file's `stat`: the counters are the
        // reads, so that `requests` is the number of ranges read.
        let head = policy.run(&shared.name, |_| {
            let store = shared.store.clone();
            let path = shared.path.clone();
            let limit = policy.network.first_byte_timeout;
            run_on(&handle, &shared.name, async move {
                first_byte(store.head(&path), limit).await
            })
            .map_err(Failure::Permanent)?
            .map_err(|NoFirstByte| Failure::TimedOut {
                kind: TimeoutKind::FirstByte,
                doing: "HEAD".into(),
            })?
            .map_err(|e| shared.failure(e, "HEAD"))
        })?;
        shared.etag = head.e_tag;
        Ok(S3Source {
            shared: Arc::new(shared),
            size: head.size,
            policy,
            runtime,
        })
    }

    /// Opens `s3://bucket/key` (settings as [`S3Source::open_with`]) and reads its
    /// first `head` and last `tail` bytes, in one round trip: two ranged `GET`s at once
    /// (`bytes=0-{head-1}` and the suffix `bytes=-{tail}`), each of whose replies tells
    /// the object's size and ETag, instead of a `HEAD` and then the two. An object
    /// these cannot open (an empty one, or a store that refuses suffix ranges) is opened
    /// with a `HEAD` as [`S3Source::open_with`] does.
    pub fn open_with_edges(
        url: &str,
        aws_vars: impl IntoIterator<Item = (String, String)>,
        policy: RetryPolicy,
        head: u64,
        tail: u64,
    ) -> Result<(Self, Edges)> {
        let aws_vars: Vec<(String, String)> = aws_vars.into_iter().collect();
        let (shared, runtime) = Self::client(url, aws_vars.clone(), policy)?;
        let handle = runtime.handle().clone();
        let start = Instant::now();
        let opening = Arc::new(shared);
        let ends = policy.run(&opening.name, |_| {
            let (a, b) = (opening.clone(), opening.clone());
            let (first, last) = run_on(&handle, &opening.name, async move {
                futures_util::future::join(
                    a.get_opening(GetRange::Bounded(0..head.max(1))),
                    b.get_opening(GetRange::Suffix(tail.max(1))),
                )
                .await
            })
            .map_err(Failure::Permanent)?;
            Ok((first?, last?))
        });
        // The client again, now with the object's ETag for every later GET.
        let mut shared = Shared {
            name: opening.name.clone(),
            store: opening.store.clone(),
            path: opening.path.clone(),
            etag: None,
            metrics: IoMetrics::default(),
            secrets: opening.secrets.clone(),
            network: opening.network,
        };
        let ((front, front_meta), (back, back_meta)) = match ends {
            Ok(ends) => ends,
            // Ranges the store refuses: a HEAD, then the ends (an empty object, which
            // opening then reports as such).
            Err(Error::Unsupported(_)) => {
                drop(opening);
                drop(runtime);
                let source = Self::open_with(url, aws_vars, policy)?;
                let edges = Edges::read(&source, head, tail)?;
                return Ok((source, edges));
            }
            Err(e) => return Err(e),
        };
        if (front_meta.size, &front_meta.e_tag) != (back_meta.size, &back_meta.e_tag) {
            return Err(shared.remote(
                "opening",
                format!(
                    "the object changed at its origin while being opened (size {} and {})",
                    front_meta.size, back_meta.size
                ),
            ));
        }
        let size = front_meta.size;
        let (front_range, front_bytes) = front;
        let (back_range, back_bytes) = back;
        if front_range.start != 0 || back_range.end != size {
            return Err(shared.remote(
                "opening",
                "the store did not send the requested ends of the object",
            ));
        }
        for bytes in [&front_bytes, &back_bytes] {
            shared.metrics.record(false, 1, bytes.len() as u64, start);
        }
        shared.etag = front_meta.e_tag;
        let edges = Edges {
            head: front_bytes,
            tail_offset: back_range.start,
            tail: back_bytes,
        };
        Ok((
            S3Source {
                shared: Arc::new(shared),
                size,
                policy,
                runtime,
            },
            edges,
        ))
    }

    /// The ETag the object had when it was opened (`None` if the store gave none; then
    /// a replaced object cannot be detected).
    pub fn etag(&self) -> Option<&str> {
        self.shared.etag.as_deref()
    }

    /// `Err(Truncated)` unless `[offset, offset + len)` lies inside the object: checked
    /// before any request, so allocations are bounded by the object's real size.
    fn check_range(&self, offset: u64, len: u64) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Error::Truncated {
                what: self.shared.name.clone(),
                offset,
                needed: len,
                available: self.size.saturating_sub(offset),
            }),
        }
    }
}

impl S3Source {
    /// Reads `ranges`: nearby ones in one ranged `GET`, the `GET`s concurrently.
    fn read_vectored(&self, ranges: &[ByteRange]) -> Result<Vec<Vec<u8>>> {
        for range in ranges {
            self.check_range(range.offset, range.len)?;
        }
        // Nearby small ranges (the page lists of many cluster groups) go in one GET:
        // S3 has no multi-range request, and a round trip costs more than the gap.
        let grouped = coalesce(ranges);
        let spans = &grouped.spans;
        // The others are read, and after a transient fault only the spans still missing
        // are asked for again.
        let mut chunks: Vec<Option<Vec<u8>>> = vec![None; spans.len()];
        self.policy.run(&self.shared.name, |_| {
            let missing: Vec<(usize, ByteRange)> = chunks
                .iter()
                .zip(spans)
                .enumerate()
                .filter(|(_, (chunk, _))| chunk.is_none())
                .map(|(index, (_, range))| (index, *range))
                .collect();
            let shared = Arc::clone(&self.shared);
            let parallel = parallel_gets(&missing);
            let (read, failure) = run_on(self.runtime.handle(), &self.shared.name, async move {
                shared.get_ranges(missing, parallel).await
            })
            .map_err(Failure::Permanent)?;
            for (index, bytes) in read {
                chunks[index] = Some(bytes);
            }
            failure.map_or(Ok(()), Err)
        })?;
        let chunks = chunks
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| self.shared.remote("read", "a range was left unread"))?;
        grouped
            .split(ranges, chunks)
            .ok_or_else(|| self.shared.remote("read", "a range came back short"))
    }
}

impl ReadAt for S3Source {
    fn name(&self) -> &str {
        &self.shared.name
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let mut chunks = self.read_vectored(&[ByteRange { offset, len }])?;
        Ok(chunks.pop().unwrap_or_default())
    }

    fn read(&self, request: ReadRequest<'_>) -> Result<Vec<RangeBuffer>> {
        request.serve(drop, |r| self.read_vectored(r))
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.shared.metrics.snapshot()
    }

    fn profile(&self) -> super::SourceProfile {
        // S3's ETag hashes the object's content (the MD5 of a single upload, of the
        // parts' MD5s for a multipart one): every rewrite changes it.
        super::SourceProfile {
            validators: super::Validators {
                etag: self.shared.etag.clone(),
                etag_follows_content: true,
                ..super::Validators::default()
            },
            ..super::SourceProfile::with_hints(S3_HINTS)
        }
    }
}

impl Shared {
    /// One ranged `GET` per range, at most `parallel` at a time. Returns the ranges read
    /// (by index), and the fault that stopped the others: the first permanent one at
    /// once, else the first transient one after every `GET` has had its try.
    async fn get_ranges(
        &self,
        ranges: Vec<(usize, ByteRange)>,
        parallel: usize,
    ) -> (Vec<(usize, Vec<u8>)>, Option<Failure>) {
        let gets = ranges.into_iter().map(|(index, range)| async move {
            (index, self.get_range(range.offset, range.len).await)
        });
        let mut done = futures_util::stream::iter(gets).buffer_unordered(parallel.max(1));
        let mut read = Vec::new();
        let mut transient = None;
        // Each GET is charged the time since the previous one finished, so the waits
        // recorded for one call add up to its wall time, not more.
        let mut since = Instant::now();
        while let Some((index, outcome)) = done.next().await {
            match outcome {
                Ok(bytes) => {
                    self.metrics.record(false, 1, bytes.len() as u64, since);
                    since = Instant::now();
                    read.push((index, bytes));
                }
                Err(permanent @ Failure::Permanent(_)) => return (read, Some(permanent)),
                Err(fault) => {
                    transient.get_or_insert(fault);
                }
            }
        }
        (read, transient)
    }

    /// A `GET`'s answer up to its headers, within the first-byte timeout (`what`: the
    /// request, for messages); the store's own error as it is.
    async fn get_headers(
        &self,
        options: GetOptions,
        what: &str,
    ) -> std::result::Result<object_store::Result<GetResult>, Failure> {
        first_byte(
            self.store.get_opts(&self.path, options),
            self.network.first_byte_timeout,
        )
        .await
        .map_err(|NoFirstByte| Failure::TimedOut {
            kind: TimeoutKind::FirstByte,
            doing: what.to_string(),
        })
    }

    /// A ranged `GET` at opening, before the ETag is known: the range the store sent,
    /// its bytes and what it says of the object (size, ETag).
    async fn get_opening(
        &self,
        range: GetRange,
    ) -> std::result::Result<((std::ops::Range<u64>, Vec<u8>), ObjectMeta), Failure> {
        let what = || format!("opening: GET {range}");
        let options = GetOptions {
            range: Some(range.clone()),
            ..GetOptions::default()
        };
        let result = self.get_headers(options, &what()).await?.map_err(|e| {
            // A range the store will not serve (an empty object: 416; a store without
            // suffix ranges: 400, 501): opened with a HEAD instead.
            let refused = http_status(&e.to_string())
                .is_some_and(|s| ["400", "416", "501"].iter().any(|c| s.starts_with(c)));
            if refused {
                Failure::Permanent(Error::Unsupported(format!("{}: {}", what(), e)))
            } else {
                self.failure(e, &what())
            }
        })?;
        let meta = result.meta.clone();
        let sent = result.range.clone();
        let bytes = self
            .read_body(result, sent.end - sent.start, &what())
            .await?;
        Ok(((sent, bytes), meta))
    }

    /// One ranged `GET` of exactly `len` (> 0) bytes at `offset`, inside the object.
    async fn get_range(&self, offset: u64, len: u64) -> std::result::Result<Vec<u8>, Failure> {
        let end = offset + len;
        let what = || format!("GET bytes {offset}..{end}");
        let options = GetOptions {
            range: Some(GetRange::Bounded(offset..end)),
            if_match: self.etag.clone(),
            ..GetOptions::default()
        };
        let result = self
            .get_headers(options, &what())
            .await?
            .map_err(|e| self.failure(e, &what()))?;
        // A store that ignores If-Match still reports the ETag of what it sent.
        if self.etag.is_some() && result.meta.e_tag != self.etag {
            return Err(Failure::Permanent(self.changed(&what())));
        }
        if result.range != (offset..end) {
            let detail = format!(
                "the server sent bytes {}..{} instead",
                result.range.start, result.range.end
            );
            return Err(Failure::Permanent(self.remote(&what(), detail)));
        }
        self.read_body(result, len, &what()).await
    }

    /// The `len` bytes of a `GET`'s body (`what`: the request, for messages).
    async fn read_body(
        &self,
        result: GetResult,
        len: u64,
        what: &str,
    ) -> std::result::Result<Vec<u8>, Failure> {
        read_body(result, len, what, &self.network, &self.name, &self.secrets).await
    }

    /// What an `object_store` error during `operation` means (see [`failure`]).
    fn failure(&self, err: object_store::Error, operation: &str) -> Failure {
        failure(err, &self.name, &self.secrets, operation)
    }

    fn changed(&self, operation: &str) -> Error {
        changed(&self.name, operation)
    }

    fn remote(&self, operation: &str, detail: impl std::fmt::Display) -> Error {
        Error::Remote {
            kind: RemoteKind::Other,
            what: self.name.clone(),
            detail: format!("{operation}: {detail}"),
        }
    }
}

/// The `len` bytes of a `GET`'s body, each wait for the next chunk bounded by
/// `network`'s idle timeout, the whole body by its low-speed limit (`what`: the
/// request, `name`: the object's URL, for messages; `secrets`: the credential values to
/// mask in them).
pub(crate) async fn read_body(
    result: GetResult,
    len: u64,
    what: &str,
    network: &NetworkOptions,
    name: &str,
    secrets: &[String],
) -> std::result::Result<Vec<u8>, Failure> {
    let what = || what.to_string();
    // The requested length bounds the buffer, whatever the server streams.
    let mut bytes = Vec::with_capacity(to_usize(len, "an S3 read").map_err(Failure::Permanent)?);
    let mut body = result.into_stream();
    let mut meter = SpeedMeter::start(network);
    let timed_out = |kind| Failure::TimedOut {
        kind,
        doing: format!("{}: reading the body", what()),
    };
    loop {
        let next = within_limits(body.next(), network.idle_timeout, &meter)
            .await
            .map_err(timed_out)?;
        let Some(chunk) = next else {
            break;
        };
        let chunk = chunk.map_err(|e| failure(e, name, secrets, &what()))?;
        meter
            .record(chunk.len() as u64)
            .map_err(|_| timed_out(TimeoutKind::LowSpeed))?;
        if bytes.len() as u64 + chunk.len() as u64 > len {
            let detail = format!("{}: the server sent more bytes than asked for", what());
            return Err(Failure::Permanent(Error::remote(
                RemoteKind::Other,
                name,
                detail,
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    if bytes.len() as u64 != len {
        // The body ended early without a transport error: try again.
        return Err(Failure::Transient {
            kind: RemoteKind::ConnectionReset,
            detail: format!("{}: short read: {} of {len} bytes", what(), bytes.len()),
            after: None,
        });
    }
    Ok(bytes)
}

/// What an `object_store` error during `operation` on the object `name` (its URL,
/// without credentials) means: a missing object, a changed one, a fault worth retrying
/// (no answer, a cut connection, HTTP 5xx, 408, 429), or another refusal. `secrets`:
/// the credential values to mask in the message.
pub(crate) fn failure(
    err: object_store::Error,
    name: &str,
    secrets: &[String],
    operation: &str,
) -> Failure {
    match err {
        object_store::Error::NotFound { .. } => Failure::Permanent(Error::remote(
            RemoteKind::NotFound,
            name,
            format!("{operation}: no such bucket or key"),
        )),
        object_store::Error::Precondition { .. } => Failure::Permanent(changed(name, operation)),
        other if connect_timed_out(&other) => Failure::TimedOut {
            kind: TimeoutKind::Connect,
            doing: format!("{operation}: connecting"),
        },
        other => {
            let detail = format!("{operation}: {}", describe(&other, secrets));
            let kind = match &other {
                object_store::Error::PermissionDenied { .. }
                | object_store::Error::Unauthenticated { .. } => RemoteKind::PermissionDenied,
                // A refusal without an S3 error body (a HEAD's, some servers' GETs).
                _ => transport_kind(&other).unwrap_or_else(|| {
                    match http_status(&other.to_string()) {
                        Some(status) if status.starts_with("401") || status.starts_with("403") => {
                            RemoteKind::PermissionDenied
                        }
                        _ => RemoteKind::Other,
                    }
                }),
            };
            if is_transient(&other) && kind != RemoteKind::Tls {
                Failure::Transient {
                    kind,
                    detail,
                    after: None,
                }
            } else {
                Failure::Permanent(Error::remote(kind, name, detail))
            }
        }
    }
}

/// The object `name` changed since it was opened, found during `operation`.
pub(crate) fn changed(name: &str, operation: &str) -> Error {
    Error::remote(
        RemoteKind::Changed,
        name,
        format!(
            "{operation}: the object changed at its origin since it was opened (its ETag no \
             longer matches): read it again"
        ),
    )
}

/// What sort of transport fault `err` is (see [`reqwest_kind`]), when one of
/// [`S3Connector`]'s clients failed below it.
fn transport_kind(err: &object_store::Error) -> Option<RemoteKind> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(e) = e.downcast_ref::<reqwest::Error>() {
            return Some(reqwest_kind(e));
        }
        current = e.source();
    }
    None
}

/// Whether `err` is the connect timeout of one of [`S3Connector`]'s clients running out.
fn connect_timed_out(err: &object_store::Error) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(e) = e.downcast_ref::<reqwest::Error>() {
            return e.is_connect() && e.is_timeout();
        }
        current = e.source();
    }
    false
}

/// Whether a fault may pass: the exchange broke (no connection, a timeout, a cut
/// body), or the server said so (HTTP 5xx, 408 Request Timeout, 429 Too Many Requests).
fn is_transient(err: &object_store::Error) -> bool {
    if transport_causes(err).is_some() {
        return true;
    }
    let message = err.to_string();
    http_status(&message).is_some_and(|status| {
        status.starts_with('5') || status.starts_with("408") || status.starts_with("429")
    })
}

/// Runs `task` on the source's runtime and waits for it on this thread. The caller
/// blocks on a channel, not inside the runtime, so this works from any thread (rayon
/// workers, or a thread of some other async runtime) without starving the runtime.
pub(crate) fn run_on<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    name: &str,
    task: impl Future<Output = T> + Send + 'static,
) -> Result<T> {
    let (sender, receiver) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        // The receiver only goes away if the caller is gone; nothing to report then.
        let _ = sender.send(task.await);
    });
    receiver.recv().map_err(|_| Error::Remote {
        kind: RemoteKind::Other,
        what: name.to_string(),
        detail: "the S3 client's task stopped before answering".to_string(),
    })
}

/// The bucket and key of `s3://bucket/key` (`name` is the URL for messages).
fn parse_s3_url<'a>(url: &'a str, name: &str) -> Result<(&'a str, &'a str)> {
    let rest = url
        .split_once("://")
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("s3"))
        .map(|(_, rest)| rest)
        .ok_or_else(|| Error::InvalidArgument(format!("{name} is not an s3:// URL")))?;
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.contains('@') {
        return Err(Error::InvalidArgument(format!(
            "{name}: credentials in s3:// URLs are not supported; set AWS_ACCESS_KEY_ID and \
             AWS_SECRET_ACCESS_KEY instead"
        )));
    }
    if bucket.is_empty() || key.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{name}: expected s3://bucket/key"
        )));
    }
    Ok((bucket, key))
}

/// The credential values among `aws_vars`, to be masked in messages.
pub(crate) fn secret_values(aws_vars: &[(String, String)]) -> Vec<String> {
    const SECRET_KEYS: [&str; 4] = [
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_TOKEN",
        "AWS_SSE_CUSTOMER_KEY_BASE64",
    ];
    aws_vars
        .iter()
        .filter(|(key, value)| SECRET_KEYS.contains(&key.as_str()) && !value.is_empty())
        .map(|(_, value)| value.clone())
        .collect()
}

/// A message for an `object_store` error without anything secret: for an HTTP status,
/// the status and the S3 error code and message from the reply; for a transport fault,
/// its chain of causes (e.g. `... tcp connect error: Connection refused`).
fn describe(err: &object_store::Error, secrets: &[String]) -> String {
    let top = err.to_string();
    let detail = if let Some(status) = http_status(&top) {
        let body = &top[top.find('<').unwrap_or(top.len())..];
        match (xml_element(body, "Code"), xml_element(body, "Message")) {
            (Some(code), Some(message)) => format!("HTTP {status}: {code}: {message}"),
            (Some(code), None) => format!("HTTP {status}: {code}"),
            _ => format!("HTTP {status}"),
        }
    } else if let Some(causes) = transport_causes(err) {
        causes
    } else {
        // Not an HTTP exchange (configuration, path, ...): the message, reply bodies cut.
        top[..top.find('<').unwrap_or(top.len())]
            .trim_end()
            .to_string()
    };
    let detail = scrub(&detail, secrets);
    match detail.char_indices().nth(MAX_DETAIL_CHARS) {
        Some((cut, _)) => format!("{}...", &detail[..cut]),
        None => detail,
    }
}

/// `403 Forbidden` from object_store's "... status code: 403 Forbidden: <body>".
fn http_status(message: &str) -> Option<&str> {
    let after = &message[message.find("status code: ")? + "status code: ".len()..];
    let status = after.split(':').next()?.trim();
    status
        .starts_with(|c: char| c.is_ascii_digit())
        .then_some(status)
}

/// The causes below the transport error (`object_store::client::HttpError`) in
/// `err`'s chain, joined by `: `; `None` if there is no transport error.
fn transport_causes(err: &object_store::Error) -> Option<String> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if e.downcast_ref::<object_store::client::HttpError>()
            .is_some()
        {
            let mut causes = Vec::new();
            let mut cause = e.source();
            while let Some(c) = cause {
                causes.push(c.to_string());
                cause = c.source();
            }
            return Some(causes.join(": "));
        }
        current = e.source();
    }
    None
}

/// The text of the first `<tag>...</tag>` in `xml` (S3 error replies are small XML
/// documents: `<Error><Code>...</Code><Message>...</Message>...`).
fn xml_element<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    let len = xml[start..].find(&format!("</{tag}>"))?;
    Some(xml[start..start + len].trim())
}

/// `text` with every credential value and every `Signature=...` masked.
pub(crate) fn scrub(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_string();
    for secret in secrets {
        text = text.replace(secret.as_str(), "***");
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("Signature=") {
        let value_start = at + "Signature=".len();
        out.push_str(&rest[..value_start]);
        out.push_str("***");
        let value_len = rest[value_start..]
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len() - value_start);
        rest = &rest[value_start + value_len..];
    }
    out.push_str(rest);
    out
}

mod client;
#[cfg(test)]
mod tests;

pub(crate) use client::s3_builder;
