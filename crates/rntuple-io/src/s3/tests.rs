//! Tests of the S3 source against a minimal S3 server on loopback, written here so that
//! every fault (a replaced object, a lying server, an error reply echoing credentials)
//! can be staged. The integration tests under `tests/` run a real S3 server (moto).

use super::*;
use crate::test_bytes::test_bytes;
use crate::tried::{expect_tried, expect_tried_ending};
use crate::ReadRanges;
use object_store::aws::AmazonS3ConfigKey;
use rayon::prelude::*;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

const SECRET_KEY: &str = "wJalrXUtnFEMIxK7MDENGxbPxRfiCYzzSECRETzz";
const SESSION_TOKEN: &str = "FwoGZXIvYXdzEXAMPLExSESSIONxTOKENx0123456789";

/// What the fake server was asked.
#[derive(Debug, Clone)]
struct Logged {
    method: String,
    path: String,
    range: Option<String>,
    if_match: Option<String>,
    authorization: Option<String>,
}

/// How the fake server misbehaves, if at all.
#[derive(Default)]
struct Faults {
    /// Replace the object (new ETag) right after the first HEAD.
    replace_after_head: AtomicBool,
    /// Serve GETs whatever their If-Match says (as some S3-compatible stores do).
    ignore_if_match: AtomicBool,
    /// Answer this many GETs with 503 first.
    unavailable_gets: AtomicUsize,
    /// Answer everything with 403 and a reply echoing the request's credentials.
    deny_echoing_credentials: AtomicBool,
    /// Answer ranged GETs with the range shifted by one byte.
    wrong_range: AtomicBool,
    /// Cut this many GET replies off after half their body (and close the connection).
    cut_bodies: AtomicUsize,
    /// Send GET bodies paced: at most this many bytes, each this long after the one
    /// before; the rest never (the connection is held for 3 s, then closed).
    pace_bodies: Mutex<Option<(usize, Duration)>>,
}

struct FakeS3 {
    port: u16,
    data: Vec<u8>,
    etag: Mutex<String>,
    faults: Faults,
    log: Mutex<Vec<Logged>>,
}

impl FakeS3 {
    /// Serves `data` as `s3://bucket/dir/file.root` on a free loopback port.
    fn start(data: Vec<u8>) -> Arc<FakeS3> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = Arc::new(FakeS3 {
            port: listener.local_addr().unwrap().port(),
            data,
            etag: Mutex::new("\"v1\"".to_string()),
            faults: Faults::default(),
            log: Mutex::new(Vec::new()),
        });
        let serving = Arc::clone(&server);
        // The accept loop ends with the test process.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let serving = Arc::clone(&serving);
                std::thread::spawn(move || serving.serve(stream));
            }
        });
        server
    }

    fn vars(&self) -> Vec<(String, String)> {
        [
            (
                "AWS_ENDPOINT_URL",
                format!("http://127.0.0.1:{}", self.port),
            ),
            ("AWS_ALLOW_HTTP", "true".to_string()),
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE".to_string()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_string()),
            ("AWS_SESSION_TOKEN", SESSION_TOKEN.to_string()),
            ("AWS_REGION", "us-east-1".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn open(&self) -> Result<S3Source> {
        S3Source::open_with("s3://bucket/dir/file.root", self.vars(), fast_policy())
    }

    /// The file opened with the `network` settings, one retry and backoffs of 100 ms.
    fn open_retrying_once(&self, network: NetworkOptions) -> S3Source {
        let policy = RetryPolicy {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(100),
            ..RetryPolicy::new(NetworkOptions {
                retries: 1,
                ..network
            })
        };
        S3Source::open_with("s3://bucket/dir/file.root", self.vars(), policy).unwrap()
    }

    fn gets(&self) -> Vec<Logged> {
        let log = self.log.lock().unwrap();
        log.iter().filter(|r| r.method == "GET").cloned().collect()
    }

    /// Answers the requests of one connection (keep-alive) until it closes.
    fn serve(&self, stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        loop {
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                return;
            }
            let mut parts = request_line.split_whitespace();
            let method = parts.next().unwrap_or("").to_string();
            let path = parts.next().unwrap_or("").to_string();
            let mut headers = HashMap::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':') {
                    headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
                }
            }
            let body_len: usize = headers
                .get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; body_len];
            reader.read_exact(&mut body).unwrap();
            let logged = Logged {
                method,
                path,
                range: headers.get("range").cloned(),
                if_match: headers.get("if-match").cloned(),
                authorization: headers.get("authorization").cloned(),
            };
            self.log.lock().unwrap().push(logged.clone());
            let cuts_before = self.faults.cut_bodies.load(Ordering::SeqCst);
            let response = self.respond(&logged);
            let pace = *self.faults.pace_bodies.lock().unwrap();
            if let (Some((sent, every)), "GET") = (pace, logged.method.as_str()) {
                let body_at = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                let (head, body) = response.split_at(body_at);
                if writer.write_all(head).is_err() {
                    return;
                }
                for b in &body[..sent.min(body.len())] {
                    std::thread::sleep(every);
                    if writer.write_all(std::slice::from_ref(b)).is_err() {
                        return;
                    }
                }
                if sent < body.len() {
                    // Stalled: for longer than any test waits.
                    std::thread::sleep(Duration::from_secs(60));
                    return;
                }
                continue;
            }
            if writer.write_all(&response).is_err() {
                return;
            }
            if self.faults.cut_bodies.load(Ordering::SeqCst) != cuts_before {
                return; // the reply was cut: end the connection, as a crash would
            }
        }
    }

    fn respond(&self, request: &Logged) -> Vec<u8> {
        let etag = self.etag.lock().unwrap().clone();
        let common = format!(
            "ETag: {etag}\r\nLast-Modified: Thu, 01 Jan 2026 00:00:00 GMT\r\nx-amz-request-id: 1\r\n"
        );
        if self.faults.deny_echoing_credentials.load(Ordering::SeqCst) {
            // Like S3's SignatureDoesNotMatch, which echoes the signature it was given.
            let body = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code>\
                 <Message>Access Denied</Message><SignatureProvided>{}</SignatureProvided>\
                 <Echo>{SECRET_KEY} {SESSION_TOKEN}</Echo></Error>",
                request.authorization.clone().unwrap_or_default()
            );
            return reply(
                "403 Forbidden",
                "",
                body.as_bytes(),
                request.method == "HEAD",
            );
        }
        if request.path != "/bucket/dir/file.root" {
            let body = "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code></Error>";
            return reply(
                "404 Not Found",
                "",
                body.as_bytes(),
                request.method == "HEAD",
            );
        }
        if request.method == "HEAD" {
            if self.faults.replace_after_head.swap(false, Ordering::SeqCst) {
                *self.etag.lock().unwrap() = "\"v2\"".to_string();
            }
            let headers = format!("{common}Content-Length: {}\r\n", self.data.len());
            return reply_head_only("200 OK", &headers);
        }
        if take_one(&self.faults.unavailable_gets) {
            return reply(
                "503 Service Unavailable",
                "",
                b"<Error><Code>SlowDown</Code></Error>",
                false,
            );
        }
        if let Some(wanted) = &request.if_match {
            if *wanted != etag && !self.faults.ignore_if_match.load(Ordering::SeqCst) {
                let body = "<Error><Code>PreconditionFailed</Code></Error>";
                return reply("412 Precondition Failed", "", body.as_bytes(), false);
            }
        }
        let Some((first, last)) = request
            .range
            .as_deref()
            .and_then(|r| r.strip_prefix("bytes="))
            .and_then(|r| r.split_once('-'))
            .and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?)))
        else {
            return reply("200 OK", &common, &self.data, false);
        };
        let shift = usize::from(self.faults.wrong_range.load(Ordering::SeqCst));
        let (first, last) = (first + shift, (last + shift).min(self.data.len() - 1));
        let headers = format!(
            "{common}Content-Range: bytes {first}-{last}/{}\r\n",
            self.data.len()
        );
        let mut response = reply(
            "206 Partial Content",
            &headers,
            &self.data[first..=last],
            false,
        );
        if take_one(&self.faults.cut_bodies) {
            response.truncate(response.len() - (last + 1 - first) / 2);
        }
        response
    }
}

/// Takes one from `counter` if it is not 0.
fn take_one(counter: &AtomicUsize) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

fn reply(status: &str, headers: &str, body: &[u8], head: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head {
        out.extend_from_slice(body);
    }
    out
}

fn reply_head_only(status: &str, headers: &str) -> Vec<u8> {
    format!("HTTP/1.1 {status}\r\n{headers}\r\n").into_bytes()
}

fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        ..RetryPolicy::new(NetworkOptions {
            retries: 2,
            ..NetworkOptions::default()
        })
    }
}

/// Checks the failure `err` of two attempts (one retry) that `took` so long: at least
/// `low` (the waits it gave up after), far less than the stalls, and its fault (before
/// what was tried) ends with `fault_end`.
fn failed_twice(err: &str, took: Duration, low: Duration, fault_end: &str) {
    println!("{err} [{took:?}]");
    assert!(took >= low && took <= Duration::from_secs(30), "{took:?}");
    expect_tried_ending(err, fault_end, 2, 1);
}

#[test]
fn reads_ranges_with_one_get_each_and_exact_counters() {
    let data = test_bytes(6_000_000);
    let server = FakeS3::start(data.clone());
    let source = server.open().unwrap();
    assert_eq!(source.size(), data.len() as u64);
    assert_eq!(source.etag(), Some("\"v1\""));
    assert_eq!(source.name(), "s3://bucket/dir/file.root");
    assert_eq!(source.profile().hints, S3_HINTS);

    assert_eq!(source.read_at(1000, 5000).unwrap(), data[1000..6000]);
    // Farther apart than COALESCE_GAP: a GET each.
    let ranges: Vec<ByteRange> = (0..20u64)
        .map(|i| ByteRange {
            offset: i * 290_000 + 7,
            len: 1 + i * 500,
        })
        .chain([ByteRange { offset: 5, len: 0 }])
        .collect();
    let chunks = source.read_ranges(&ranges).unwrap();
    for (range, chunk) in ranges.iter().zip(&chunks) {
        let (start, end) = (range.offset as usize, (range.offset + range.len) as usize);
        assert_eq!(chunk, &data[start..end], "range {range:?}");
    }

    let metrics = source.metrics();
    let non_empty = 1 + 20;
    let bytes: u64 = 5000 + ranges.iter().map(|r| r.len).sum::<u64>();
    assert_eq!(metrics.requests, non_empty);
    assert_eq!(metrics.ranges, non_empty);
    assert_eq!(metrics.vector_requests, 0, "S3 has no multi-range GET");
    assert_eq!(metrics.bytes_read, bytes);

    let gets = server.gets();
    assert_eq!(gets.len() as u64, non_empty);
    assert!(gets.iter().all(|g| g.if_match.as_deref() == Some("\"v1\"")));
    assert!(gets.iter().all(|g| g.path == "/bucket/dir/file.root"));
    assert!(gets
        .iter()
        .any(|g| g.range.as_deref() == Some("bytes=1000-5999")));
    let auth = gets[0].authorization.as_deref().unwrap_or("");
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"),
        "{auth}"
    );
}

#[test]
fn out_of_bounds_reads_fail_before_any_request() {
    let server = FakeS3::start(test_bytes(1000));
    let source = server.open().unwrap();
    let err = source.read_at(900, 101).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Truncated {
                offset: 900,
                needed: 101,
                available: 100,
                ..
            }
        ),
        "{err}"
    );
    let err = source.read_ranges(&[
        ByteRange { offset: 0, len: 10 },
        ByteRange {
            offset: u64::MAX,
            len: 2,
        },
    ]);
    assert!(matches!(err, Err(Error::Truncated { .. })));
    assert!(server.gets().is_empty());
}

#[test]
fn reads_from_many_rayon_workers_at_once() {
    let data = Arc::new(test_bytes(1 << 20));
    let server = FakeS3::start(data.to_vec());
    let source = Arc::new(server.open().unwrap());
    let (done, finished) = std::sync::mpsc::channel();
    let (data2, source2) = (Arc::clone(&data), Arc::clone(&source));
    // On its own thread, so that a deadlock fails the test instead of hanging it.
    std::thread::spawn(move || {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(16)
            .build()
            .unwrap();
        let outcome = pool.install(|| {
            (0..64u64).into_par_iter().try_for_each(|i| {
                let offset = i * 9_000;
                if i % 2 == 0 {
                    let got = source2.read_at(offset, 4_096)?;
                    assert_eq!(got, data2[offset as usize..offset as usize + 4_096]);
                } else {
                    let ranges: Vec<ByteRange> = (0..12)
                        .map(|k| ByteRange {
                            offset: offset + k * 1_000,
                            len: 700,
                        })
                        .collect();
                    for (r, chunk) in ranges.iter().zip(source2.read_ranges(&ranges)?) {
                        assert_eq!(chunk, data2[r.offset as usize..(r.offset + r.len) as usize]);
                    }
                }
                Ok::<_, Error>(())
            })
        });
        let _ = done.send(outcome);
    });
    let outcome = finished
        .recv_timeout(Duration::from_secs(120))
        .expect("reads from rayon workers did not finish (deadlock?)");
    outcome.unwrap();
    let metrics = source.metrics();
    // The 12 nearby ranges of a call in one GET (with the 300-byte gaps between them).
    assert_eq!(metrics.requests, 32 + 32);
    assert_eq!(metrics.bytes_read, 32 * 4_096 + 32 * (11 * 1_000 + 700));
}

#[test]
fn a_replaced_object_is_an_error_not_mixed_data() {
    let server = FakeS3::start(test_bytes(10_000));
    server
        .faults
        .replace_after_head
        .store(true, Ordering::SeqCst);
    let source = server.open().unwrap();
    let err = source.read_at(0, 100).unwrap_err();
    assert_eq!(err.remote_kind(), Some(RemoteKind::Changed), "{err}");
    assert!(
        err.to_string()
            .contains("changed at its origin since it was opened"),
        "{err}"
    );
    assert_eq!(source.metrics().requests, 0, "no bytes were delivered");

    // A store that ignores If-Match is caught by the ETag of its reply.
    server.faults.ignore_if_match.store(true, Ordering::SeqCst);
    let err = source
        .read_ranges(&[ByteRange {
            offset: 0,
            len: 100,
        }])
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("changed at its origin since it was opened"),
        "{err}"
    );
}

#[test]
fn a_reply_with_other_bytes_than_asked_is_an_error() {
    let server = FakeS3::start(test_bytes(10_000));
    let source = server.open().unwrap();
    server.faults.wrong_range.store(true, Ordering::SeqCst);
    let err = source.read_at(100, 50).unwrap_err();
    assert!(matches!(err, Error::Remote { .. }), "{err}");
}

#[test]
fn transient_server_errors_are_retried() {
    let data = test_bytes(10_000);
    let server = FakeS3::start(data.clone());
    let source = server.open().unwrap();
    server.faults.unavailable_gets.store(2, Ordering::SeqCst);
    assert_eq!(source.read_at(10, 20).unwrap(), data[10..30]);
    assert_eq!(server.gets().len(), 3, "two 503s, then the answer");
    assert_eq!(source.metrics().requests, 1);

    server.faults.unavailable_gets.store(3, Ordering::SeqCst);
    let err = source.read_at(10, 20).unwrap_err().to_string();
    let tried = expect_tried(&err);
    assert!(tried.fault.contains("503"), "{err}");
    assert_eq!((tried.attempts, tried.retries), (3, 2));
}

#[test]
fn after_a_fault_only_the_missing_ranges_are_read_again() {
    let data = test_bytes(1_600_000);
    let server = FakeS3::start(data.clone());
    let source = server.open().unwrap();
    // Farther apart than COALESCE_GAP: a GET each.
    let ranges: Vec<ByteRange> = (0..6u64)
        .map(|i| ByteRange {
            offset: i * 300_000,
            len: 10_000,
        })
        .collect();
    server.faults.unavailable_gets.store(1, Ordering::SeqCst);
    server.faults.cut_bodies.store(1, Ordering::SeqCst);
    let chunks = source.read_ranges(&ranges).unwrap();
    for (range, chunk) in ranges.iter().zip(&chunks) {
        let start = range.offset as usize;
        assert_eq!(chunk, &data[start..start + 10_000]);
    }
    assert_eq!(
        server.gets().len(),
        6 + 2,
        "a 503 and a cut body, each read again"
    );
    assert_eq!(source.metrics().requests, 6);
    assert_eq!(source.metrics().bytes_read, 60_000);
}

#[test]
fn a_missing_key_or_bucket_is_not_found() {
    let server = FakeS3::start(test_bytes(100));
    for url in ["s3://bucket/dir/other.root", "s3://nobucket/dir/file.root"] {
        let err = S3Source::open_with(url, server.vars(), fast_policy()).unwrap_err();
        assert_eq!(err.remote_kind(), Some(RemoteKind::NotFound), "{err}");
        assert_eq!(
            err.to_string(),
            format!("remote read of {url} failed: HEAD: no such bucket or key")
        );
    }
}

#[test]
fn no_credential_reaches_a_message() {
    let server = FakeS3::start(test_bytes(1000));
    let source = server.open().unwrap();
    server
        .faults
        .deny_echoing_credentials
        .store(true, Ordering::SeqCst);
    let read_error = source.read_at(0, 10).unwrap_err().to_string();
    let open_error = server.open().unwrap_err().to_string();
    let gets = server.gets();
    let authorization = gets.last().and_then(|g| g.authorization.clone()).unwrap();
    let signature = authorization.rsplit("Signature=").next().unwrap();
    assert_eq!(signature.len(), 64, "{authorization}");
    for message in [&read_error, &open_error, &format!("{source:?}")] {
        for secret in [SECRET_KEY, SESSION_TOKEN, signature] {
            assert!(!message.contains(secret), "{message} shows {secret}");
        }
    }
    assert!(
        read_error.contains("HTTP 403 Forbidden: AccessDenied: Access Denied"),
        "{read_error}"
    );
    assert!(open_error.contains("HTTP 403"), "{open_error}");
}

#[test]
fn a_stopped_server_is_a_remote_error_after_the_retries() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let vars = vec![
        (
            "AWS_ENDPOINT_URL".to_string(),
            format!("http://127.0.0.1:{port}"),
        ),
        ("AWS_ALLOW_HTTP".to_string(), "true".to_string()),
        ("AWS_ACCESS_KEY_ID".to_string(), "AKIDEXAMPLE".to_string()),
        ("AWS_SECRET_ACCESS_KEY".to_string(), SECRET_KEY.to_string()),
    ];
    let err = S3Source::open_with("s3://bucket/key.root", vars, fast_policy()).unwrap_err();
    let message = err.to_string();
    assert_eq!(
        err.remote_kind(),
        Some(RemoteKind::ConnectionRefused),
        "{message}"
    );
    assert!(message.contains("s3://bucket/key.root"), "{message}");
    assert!(message.to_lowercase().contains("connect"), "{message}");
    let tried = expect_tried(&message);
    assert_eq!((tried.attempts, tried.retries), (3, 2));
    assert!(!message.contains(SECRET_KEY), "{message}");
}

#[test]
fn urls_are_checked() {
    for (url, problem) in [
        ("s3://bucket", "expected s3://bucket/key"),
        ("s3:///key", "expected s3://bucket/key"),
        ("s3://AKID:secret@bucket/key", "credentials in s3:// URLs"),
    ] {
        let err = S3Source::open_with(url, Vec::new(), fast_policy())
            .unwrap_err()
            .to_string();
        assert!(err.contains(problem), "{url}: {err}");
        assert!(!err.contains("secret@"), "{err}");
    }
    assert_eq!(
        parse_s3_url("s3://my-bucket/a/b/c.root", "x").unwrap(),
        ("my-bucket", "a/b/c.root")
    );
}

#[test]
fn path_style_for_custom_endpoints_virtual_hosted_on_aws() {
    let style = |bucket: &str, vars: &[(&str, &str)]| {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        s3_builder(bucket, &vars, RetryPolicy::default())
            .get_config_value(&AmazonS3ConfigKey::VirtualHostedStyleRequest)
            .unwrap()
    };
    let minio = ("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
    assert_eq!(style("b", &[minio]), "false");
    assert_eq!(
        style("b", &[("AWS_ENDPOINT", "https://ceph.example")]),
        "false"
    );
    assert_eq!(
        style("b", &[minio, ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "true")]),
        "true"
    );
    assert_eq!(style("b", &[]), "true");
    assert_eq!(style("dotted.bucket", &[]), "false");
    assert_eq!(
        style("b", &[("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "false")]),
        "false"
    );

    let builder = s3_builder(
        "b",
        &[("AWS_DEFAULT_REGION".to_string(), "eu-west-3".to_string())],
        RetryPolicy::default(),
    );
    assert_eq!(
        builder
            .get_config_value(&AmazonS3ConfigKey::Region)
            .as_deref(),
        Some("eu-west-3")
    );
    assert_eq!(
        builder
            .get_config_value(&AmazonS3ConfigKey::Bucket)
            .as_deref(),
        Some("b")
    );
}

#[test]
fn messages_are_reduced_and_scrubbed() {
    let top = "Generic S3 error: Error performing GET http://h/b/k in 2ms, after 4 retries, \
               max_retries: 4, retry_timeout: 180s  - Server returned non-2xx status code: \
               503 Service Unavailable: <Error><Code>SlowDown</Code><Message>Reduce</Message></Error>";
    assert_eq!(http_status(top), Some("503 Service Unavailable"));
    assert_eq!(xml_element(top, "Code"), Some("SlowDown"));
    assert_eq!(xml_element(top, "Message"), Some("Reduce"));
    assert_eq!(xml_element(top, "Resource"), None);
    assert_eq!(http_status("HTTP error: error sending request"), None);
    assert_eq!(
        scrub(
            "Credential=AK/x, Signature=0123abcd; token tok123 and Signature=ff",
            &["tok123".to_string()]
        ),
        "Credential=AK/x, Signature=***; token *** and Signature=***"
    );
    let vars = [
        ("AWS_SECRET_ACCESS_KEY".to_string(), "s1".to_string()),
        ("AWS_ACCESS_KEY_ID".to_string(), "id".to_string()),
        ("AWS_SESSION_TOKEN".to_string(), "t1".to_string()),
        ("AWS_TOKEN".to_string(), String::new()),
    ];
    assert_eq!(secret_values(&vars), ["s1", "t1"]);
}

#[test]
fn a_body_that_stalls_runs_into_the_idle_timeout_one_that_moves_never_does() {
    let data = test_bytes(1000);
    let server = FakeS3::start(data.clone());
    // Timeouts of 1 s: a stall of 60 s runs into them; bytes 100 ms apart never do.
    let source = server.open_retrying_once(NetworkOptions {
        connect_timeout: Duration::from_secs(1),
        first_byte_timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(1),
        ..NetworkOptions::default()
    });

    // 10 bytes of 100, then nothing.
    *server.faults.pace_bodies.lock().unwrap() = Some((10, Duration::ZERO));
    let start = Instant::now();
    let err = source.read_at(100, 100).unwrap_err().to_string();
    let took = start.elapsed();
    // Two waits of 1 s and a backoff; far less than the stalls.
    failed_twice(
        &err,
        took,
        Duration::from_millis(2000),
        "GET bytes 100..200: reading the body: the answer stalled for 1 s (idle \
         timeout, RNTUPLE_IDLE_TIMEOUT or --idle-timeout)",
    );
    assert_eq!(server.gets().len(), 2);

    // 20 bytes 100 ms apart: 2 s, twice the first-byte and idle timeouts, each wait a
    // tenth of them.
    *server.faults.pace_bodies.lock().unwrap() = Some((usize::MAX, Duration::from_millis(100)));
    let start = Instant::now();
    assert_eq!(source.read_at(500, 20).unwrap(), data[500..520]);
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(2000), "{took:?}");
    assert_eq!(server.gets().len(), 3);
}

#[test]
fn nearby_small_ranges_are_read_in_one_get() {
    let r = |offset: u64, len: u64| ByteRange { offset, len };
    let asked = [
        r(1000, 100),
        r(0, 100),
        r(60_000, 50),
        r(300_000, 50),
        r(10 << 20, 10),
        r(5, 0),
        r(150, 100),
        r(20 << 20, 9 << 20),
    ];
    let super::Spans { spans, span_of } = super::coalesce(&asked);
    // 0..250, 1000..1100 and 60000..60050 within 64 KiB of each other: one span;
    // 300000 is more than 64 KiB past it: a span of its own; the 9 MiB range alone.
    let want = [
        r(0, 60_050),
        r(300_000, 50),
        r(10 << 20, 10),
        r(20 << 20, 9 << 20),
    ];
    assert_eq!(spans, want);
    let want_of = [0, 0, 0, 1, 2, usize::MAX, 0, 3].map(|s| (s != usize::MAX).then_some(s));
    assert_eq!(span_of, want_of);
}

#[test]
fn a_body_that_crawls_runs_into_the_low_speed_limit() {
    let data = test_bytes(1000);
    let server = FakeS3::start(data.clone());
    let source = server.open_retrying_once(NetworkOptions {
        idle_timeout: Duration::from_secs(5),
        speed_limit: 100,
        speed_time: Duration::from_millis(500),
        ..NetworkOptions::default()
    });
    // A byte every 40 ms: 25 bytes a second, each wait far within the idle timeout
    // (the 200 bytes would take 8 s an attempt).
    *server.faults.pace_bodies.lock().unwrap() = Some((usize::MAX, Duration::from_millis(40)));
    let start = Instant::now();
    let err = source.read_at(100, 200).unwrap_err();
    let took = start.elapsed();
    assert_eq!(err.remote_kind(), Some(RemoteKind::TimedOut), "{err}");
    let err = err.to_string();
    failed_twice(
        &err,
        took,
        Duration::from_millis(1000),
        "GET bytes 100..300: reading the body: fewer than 100 bytes a second arrived \
         over 0.5 s (low-speed limit, RNTUPLE_SPEED_LIMIT and RNTUPLE_SPEED_TIME or \
         --speed-limit and --speed-time)",
    );
    assert_eq!(server.gets().len(), 2);
}
