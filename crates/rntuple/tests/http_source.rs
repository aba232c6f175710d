//! `HttpSource` against a scripted HTTP/1.1 server on loopback: every reply a real
//! server may give (multipart in any order, coalesced parts, the whole file, only the
//! first range, header limits, 5xx, 429, 412, changed validators, short and long
//! bodies; servers that refuse multi-range or suffix ranges, or ignore ranges, or
//! compress unasked) and what the source must make of it. Bytes are checked against
//! the served file itself.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use rntuple_io::{
    ByteRange, Edges, HttpOptions, HttpSource, NetworkOptions, Observer, ReadAt, ReadHints,
    ReadRanges, RetryPolicy, Transfer, TransferObserver,
};
use rntuple_io::{Error, RemoteKind};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[path = "common/multipart_body.rs"]
mod multipart_body;
use multipart_body::multipart_body;

const SIZE: usize = 100_000;
const ETAG: &str = "\"v1-etag\"";
const BOUNDARY: &str = "MOCKBOUNDARY";

fn file() -> Vec<u8> {
    (0..SIZE).map(|i| (i * 31 % 253) as u8).collect()
}

/// One request as the server saw it: the Range header and all headers (names in
/// lower case).
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    headers: HashMap<String, String>,
}

impl Seen {
    fn range(&self) -> &str {
        self.headers.get("range").map_or("", String::as_str)
    }
    fn ranges(&self) -> Vec<(u64, u64)> {
        parse_range_header(self.range())
    }
}

/// A reply: status, extra headers, body, and whether to send a Content-Length that
/// matches the body (false: the headers give their own).
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn parse_range_header(value: &str) -> Vec<(u64, u64)> {
    value
        .trim_start_matches("bytes=")
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let (a, b) = s.split_once('-').unwrap();
            if a.is_empty() {
                // A suffix range: the last `b` bytes.
                let n: u64 = b.parse().unwrap();
                let n = n.min(SIZE as u64);
                return (SIZE as u64 - n, SIZE as u64 - 1);
            }
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect()
}

fn header(name: &str, value: impl Into<String>) -> (String, String) {
    (name.to_string(), value.into())
}

/// What a correct server sends for `ranges`: one part (206) or multipart (206), parts
/// in the order given.
fn correct_reply(ranges: &[(u64, u64)], total: usize, etag: &str) -> Reply {
    let data = file();
    if ranges.len() == 1 {
        let (a, b) = ranges[0];
        return Reply {
            status: 206,
            headers: vec![
                header("Content-Range", format!("bytes {a}-{b}/{total}")),
                header("ETag", etag),
            ],
            body: data[a as usize..=b as usize].to_vec(),
        };
    }
    multipart_reply(ranges, total, etag)
}

fn multipart_reply(parts: &[(u64, u64)], total: usize, etag: &str) -> Reply {
    let body = multipart_body(BOUNDARY, &file(), parts, total as u64);
    Reply {
        status: 206,
        headers: vec![
            header(
                "Content-Type",
                format!("multipart/byteranges; boundary={BOUNDARY}"),
            ),
            header("ETag", etag),
        ],
        body,
    }
}

fn status(code: u16) -> Reply {
    Reply {
        status: code,
        headers: Vec::new(),
        body: Vec::new(),
    }
}

type Handler = dyn Fn(usize, &Seen) -> Reply + Send + Sync;

/// A server on 127.0.0.1 answering each request with `handler(index, request)`, one
/// connection per request.
struct Mock {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    body_bytes: Arc<Mutex<u64>>,
}

impl Mock {
    fn start(handler: impl Fn(usize, &Seen) -> Reply + Send + Sync + 'static) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/data/file.root", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let body_bytes = Arc::new(Mutex::new(0u64));
        let handler: Arc<Handler> = Arc::new(handler);
        let (seen2, bytes2) = (seen.clone(), body_bytes.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (seen, bytes, handler) = (seen2.clone(), bytes2.clone(), handler.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut headers = HashMap::new();
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap(); // request line
                    let method = line.split(' ').next().unwrap_or_default().to_string();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap() == 0 || line.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = line.split_once(':') {
                            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
                        }
                    }
                    let request = Seen { method, headers };
                    let index = {
                        let mut seen = seen.lock().unwrap();
                        seen.push(request.clone());
                        seen.len() - 1
                    };
                    let reply = handler(index, &request);
                    let mut out =
                        format!("HTTP/1.1 {} Mock\r\nConnection: close\r\n", reply.status);
                    let has_length = reply
                        .headers
                        .iter()
                        .any(|(k, _)| k.eq_ignore_ascii_case("content-length"));
                    if !has_length {
                        out.push_str(&format!("Content-Length: {}\r\n", reply.body.len()));
                    }
                    for (k, v) in &reply.headers {
                        out.push_str(&format!("{k}: {v}\r\n"));
                    }
                    out.push_str("\r\n");
                    *bytes.lock().unwrap() += reply.body.len() as u64;
                    let _ = stream.write_all(out.as_bytes());
                    let _ = stream.write_all(&reply.body);
                    let _ = stream.flush();
                });
            }
        });
        Mock {
            url,
            seen,
            body_bytes,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn body_bytes(&self) -> u64 {
        *self.body_bytes.lock().unwrap()
    }
}

/// A mock answering correctly, except that `special(index, request)` may answer first.
fn mock_with(special: impl Fn(usize, &Seen) -> Option<Reply> + Send + Sync + 'static) -> Mock {
    Mock::start(move |i, seen| {
        special(i, seen).unwrap_or_else(|| correct_reply(&seen.ranges(), SIZE, ETAG))
    })
}

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        ..RetryPolicy::new(NetworkOptions {
            retries: 2,
            ..NetworkOptions::default()
        })
    }
}

fn options() -> HttpOptions {
    HttpOptions {
        retry: quick_retries(),
        ..HttpOptions::default()
    }
}

fn open(mock: &Mock) -> HttpSource {
    HttpSource::open_with(&mock.url, options()).unwrap()
}

fn r(offset: u64, len: u64) -> ByteRange {
    ByteRange { offset, len }
}

fn expected(ranges: &[ByteRange]) -> Vec<Vec<u8>> {
    let data = file();
    ranges
        .iter()
        .map(|r| data[r.offset as usize..(r.offset + r.len) as usize].to_vec())
        .collect()
}

/// Requests carrying more than one range.
fn multi_range_requests(seen: &[Seen]) -> usize {
    seen.iter().filter(|s| s.ranges().len() > 1).count()
}

#[test]
fn open_learns_size_and_validators_then_reads_conditionally() {
    let mock = mock_with(|_, _| None);
    let source = open(&mock);
    assert_eq!(source.size(), SIZE as u64);
    assert_eq!(source.read_at(1000, 10).unwrap(), file()[1000..1010]);
    assert_eq!(
        source.read_at(SIZE as u64 - 1, 1).unwrap(),
        file()[SIZE - 1..]
    );
    assert!(source.read_at(50, 0).unwrap().is_empty());
    let seen = mock.seen();
    assert_eq!(
        seen.len(),
        3,
        "open + two reads; the empty read sends nothing"
    );
    assert_eq!(seen[0].range(), "bytes=0-0");
    assert!(!seen[0].headers.contains_key("if-match"));
    assert_eq!(seen[1].range(), "bytes=1000-1009");
    assert_eq!(
        seen[1].headers.get("if-match").map(String::as_str),
        Some(ETAG)
    );
    // Past the end: refused without a request.
    let err = source.read_at(SIZE as u64 - 5, 10).unwrap_err();
    assert!(matches!(err, Error::Truncated { .. }), "{err}");
    assert_eq!(mock.seen().len(), 3);
    let m = source.metrics();
    assert_eq!((m.requests, m.vector_requests), (3, 0));
    assert_eq!(m.bytes_read, 1 + 10 + 1);
}

#[test]
fn many_ranges_are_one_multi_range_request_whatever_the_part_order() {
    // Parts come back in reverse order.
    let mock = mock_with(|_, seen| {
        let mut ranges = seen.ranges();
        (ranges.len() > 1).then(|| {
            ranges.reverse();
            multipart_reply(&ranges, SIZE, ETAG)
        })
    });
    let source = open(&mock);
    let asked = [
        r(5000, 100),
        r(10, 20),
        r(20, 30), // overlaps the previous one
        r(70_000, 0),
        r(99_000, 1000),
        r(10, 20), // asked twice
        r(50, 5),  // touches 20..50: a range of its own
    ];
    let got = source.read_ranges(&asked).unwrap();
    assert_eq!(got, expected(&asked));
    let seen = mock.seen();
    assert_eq!(seen.len(), 2, "open + one request");
    assert_eq!(seen[1].range(), "bytes=10-49,50-54,5000-5099,99000-99999");
    let m = source.metrics();
    assert_eq!((m.requests, m.vector_requests, m.ranges), (2, 1, 1 + 4));
    assert_eq!(m.bytes_read, mock.body_bytes(), "body bytes, as sent");
}

#[test]
fn coalesced_parts_and_a_single_covering_part_are_used() {
    // The server merges the two first ranges into one part.
    let mock = mock_with(|_, seen| {
        let ranges = seen.ranges();
        (ranges.len() == 3)
            .then(|| multipart_reply(&[(100, 299), (ranges[2].0, ranges[2].1)], SIZE, ETAG))
    });
    let source = open(&mock);
    let asked = [r(100, 50), r(250, 50), r(8000, 10)];
    assert_eq!(source.read_ranges(&asked).unwrap(), expected(&asked));
    assert_eq!(mock.seen().len(), 2);

    // The server answers with one part spanning everything.
    let mock = mock_with(|_, seen| {
        let ranges = seen.ranges();
        (ranges.len() > 1)
            .then(|| correct_reply(&[(ranges[0].0, ranges.last().unwrap().1)], SIZE, ETAG))
    });
    let source = open(&mock);
    let asked = [r(100, 50), r(250, 50), r(400, 10)];
    assert_eq!(source.read_ranges(&asked).unwrap(), expected(&asked));
    assert_eq!(mock.seen().len(), 2);
    assert_eq!(source.metrics().vector_requests, 1);
}

#[test]
fn a_missing_part_is_an_error() {
    let mock = mock_with(|_, seen| {
        let ranges = seen.ranges();
        (ranges.len() > 1).then(|| multipart_reply(&ranges[..ranges.len() - 1], SIZE, ETAG))
    });
    let source = open(&mock);
    let err = source
        .read_ranges(&[r(100, 10), r(300, 10), r(500, 10)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("lacks bytes 500-509"), "{err}");
}

#[test]
fn a_server_refusing_multi_range_gets_single_ranges_from_then_on() {
    // nginx with max_ranges 1: the whole file with 200.
    let mock = mock_with(|_, seen| {
        (seen.ranges().len() > 1).then(|| Reply {
            status: 200,
            headers: vec![header("ETag", ETAG)],
            body: file(),
        })
    });
    let source = open(&mock);
    let asked: Vec<ByteRange> = (0..20).map(|i| r(i * 4000 + 7, 100 + i)).collect();
    assert_eq!(source.read_ranges(&asked).unwrap(), expected(&asked));
    let seen = mock.seen();
    assert_eq!(multi_range_requests(&seen), 1);
    assert_eq!(seen.len(), 1 + 1 + 20);
    // Remembered: no multi-range request this time.
    assert_eq!(source.read_ranges(&asked).unwrap(), expected(&asked));
    let seen = mock.seen();
    assert_eq!(multi_range_requests(&seen), 1);
    assert_eq!(seen.len(), 1 + 1 + 20 + 20);
    let m = source.metrics();
    assert_eq!(m.vector_requests, 1, "the refused request counts");
    assert_eq!(m.requests, 1 + 1 + 40);
}

#[test]
fn a_server_sending_only_the_first_range_gets_single_ranges() {
    let mock = mock_with(|_, seen| {
        let ranges = seen.ranges();
        (ranges.len() > 1).then(|| correct_reply(&ranges[..1], SIZE, ETAG))
    });
    let source = open(&mock);
    let asked = [r(10, 10), r(500, 10), r(9000, 10)];
    assert_eq!(source.read_ranges(&asked).unwrap(), expected(&asked));
    assert_eq!(mock.seen().len(), 1 + 1 + 3);
}

#[test]
fn requests_too_large_for_the_server_are_split_and_later_ones_made_smaller() {
    // Header limit: at most 4 ranges.
    let mock = mock_with(|_, seen| (seen.ranges().len() > 4).then(|| status(431)));
    let source = open(&mock);
    let asked: Vec<ByteRange> = (0..16).map(|i| r(i * 1000, 10)).collect();
    assert_eq!(source.read_ranges(&asked).unwrap(), expected(&asked));
    let refused = mock.seen().iter().filter(|s| s.ranges().len() > 4).count();
    assert_eq!(refused, 3, "16 -> 8 + 8 -> 4 x 4");
    let before = mock.seen().len();
    assert_eq!(source.read_ranges(&asked).unwrap(), expected(&asked));
    let seen = mock.seen();
    assert_eq!(
        seen.len() - before,
        4,
        "four requests of four ranges at once"
    );
    assert!(seen[before..].iter().all(|s| s.ranges().len() == 4));
}

#[test]
fn batches_beyond_max_ranges_per_request_go_in_parallel_requests() {
    let mock = mock_with(|_, _| None);
    let source = HttpSource::open_with(
        &mock.url,
        HttpOptions {
            hints: ReadHints {
                max_ranges_per_request: 3,
                ..ReadHints::REMOTE
            },
            ..options()
        },
    )
    .unwrap();
    let asked: Vec<ByteRange> = (0..10).map(|i| r(i * 9000 + 1, 33)).collect();
    assert_eq!(source.read_ranges(&asked).unwrap(), expected(&asked));
    let mut sizes: Vec<usize> = mock.seen()[1..].iter().map(|s| s.ranges().len()).collect();
    sizes.sort();
    assert_eq!(sizes, vec![1, 3, 3, 3]);
    assert_eq!(source.metrics().vector_requests, 3);
}

#[test]
fn a_changed_file_is_an_error_never_mixed_data() {
    let is_changed = |e: &Error| matches!(e, Error::Remote { detail, .. } if detail.contains("the file changed at its origin while being read"));
    // The server checks If-Match: 412.
    let mock = mock_with(|i, _| (i > 0).then(|| status(412)));
    let source = open(&mock);
    let err = source.read_at(0, 10).unwrap_err();
    assert!(is_changed(&err), "{err}");
    assert_eq!(mock.seen().len(), 2, "not retried");
    // A server ignoring If-Match, with a new ETag or a new size after the open.
    let new_etag =
        || mock_with(|i, seen| (i > 0).then(|| correct_reply(&seen.ranges(), SIZE, "\"v2\"")));
    let new_size =
        || mock_with(|i, seen| (i > 0).then(|| correct_reply(&seen.ranges(), SIZE + 1, ETAG)));
    for changed_mock in [new_etag, new_size] {
        let mock = changed_mock();
        let err = open(&mock).read_at(0, 10).unwrap_err();
        assert!(is_changed(&err), "{err}");
        assert_eq!(mock.seen().len(), 2, "not retried");
        let mock = changed_mock();
        let err = open(&mock).read_ranges(&[r(0, 10), r(20, 10)]).unwrap_err();
        assert!(is_changed(&err), "{err}");
    }
}

#[test]
fn a_weak_etag_makes_requests_conditional_on_the_date() {
    let date = "Tue, 01 Jul 2025 10:00:00 GMT";
    let mock = Mock::start(move |_, seen| {
        let mut reply = correct_reply(&seen.ranges(), SIZE, "W/\"weak\"");
        reply.headers.push(header("Last-Modified", date));
        reply
    });
    let source = open(&mock);
    assert_eq!(source.read_at(5, 5).unwrap(), file()[5..10]);
    let seen = mock.seen();
    assert!(!seen[1].headers.contains_key("if-match"));
    assert_eq!(
        seen[1]
            .headers
            .get("if-unmodified-since")
            .map(String::as_str),
        Some(date)
    );
}

#[test]
fn short_or_long_bodies_are_errors() {
    // Fewer bytes than the Content-Range says, every time: retried, then Remote.
    let mock = mock_with(|i, seen| {
        (i > 0).then(|| {
            let mut reply = correct_reply(&seen.ranges(), SIZE, ETAG);
            reply.body.truncate(reply.body.len() - 3);
            reply
        })
    });
    let source = open(&mock);
    let err = source.read_at(100, 50).unwrap_err();
    assert!(
        matches!(&err, Error::Remote { detail, .. } if detail.contains("47 of 50") && detail.contains("3 attempts")),
        "{err}"
    );
    assert_eq!(mock.seen().len(), 1 + 3);
    // A connection closed in the middle of the body (Content-Length promises more).
    let mock = mock_with(|i, seen| {
        (i > 0).then(|| {
            let mut reply = correct_reply(&seen.ranges(), SIZE, ETAG);
            reply.headers.push(header("Content-Length", "50"));
            reply.body.truncate(20);
            reply
        })
    });
    let err = open(&mock).read_at(100, 50).unwrap_err();
    assert!(matches!(err, Error::Remote { .. }), "{err}");
    assert_eq!(mock.seen().len(), 1 + 3);
    // More bytes than asked for.
    let mock = mock_with(|i, seen| {
        (i > 0).then(|| {
            let mut reply = correct_reply(&seen.ranges(), SIZE, ETAG);
            reply.body.extend_from_slice(b"extra");
            reply
        })
    });
    let err = open(&mock).read_at(100, 50).unwrap_err().to_string();
    assert!(err.contains("longer than"), "{err}");
    // A part claiming far more than was asked for: refused, nothing allocated for it.
    let mock = mock_with(|i, _| {
        (i > 0).then(|| {
            let mut reply = multipart_reply(&[(0, 9)], SIZE, ETAG);
            reply.body = format!(
                "--{BOUNDARY}\r\nContent-Range: bytes 0-99998/{SIZE}\r\n\r\nabc\r\n--{BOUNDARY}--\r\n"
            )
            .into_bytes();
            reply
        })
    });
    let err = open(&mock)
        .read_ranges(&[r(0, 10), r(50, 10)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("more than the"), "{err}");
}

#[test]
fn transient_faults_are_retried_permanent_ones_are_not() {
    let mock = mock_with(|i, _| match i {
        0 => Some(status(500)),
        2 => Some(status(503)),
        3 => Some(Reply {
            status: 429,
            headers: vec![header("Retry-After", "0")],
            body: Vec::new(),
        }),
        _ => None,
    });
    let source = open(&mock);
    assert_eq!(source.read_at(10, 10).unwrap(), file()[10..20]);
    assert_eq!(mock.seen().len(), 5);

    let mock = mock_with(|_, _| Some(status(503)));
    let err = HttpSource::open_with(&mock.url, options()).unwrap_err();
    assert!(
        matches!(&err, Error::Remote { kind: RemoteKind::Other, what, detail } if what == &mock.url && detail.contains("503")),
        "{err}"
    );
    assert_eq!(mock.seen().len(), 3);

    let mock = mock_with(|_, _| Some(status(404)));
    let err = HttpSource::open_with(&mock.url, options()).unwrap_err();
    assert_eq!(err.remote_kind(), Some(RemoteKind::NotFound), "{err}");
    assert_eq!(err.io_error_kind(), Some(std::io::ErrorKind::NotFound));
    assert_eq!(
        err.to_string(),
        format!(
            "remote read of {} failed: opening: HTTP 404 Not Found",
            mock.url
        )
    );
    assert_eq!(mock.seen().len(), 1);

    let mock = mock_with(|_, _| Some(status(403)));
    let err = HttpSource::open_with(&mock.url, options()).unwrap_err();
    assert!(
        matches!(&err, Error::Remote { kind: RemoteKind::PermissionDenied, detail, .. } if detail.contains("access denied")),
        "{err}"
    );
    assert_eq!(mock.seen().len(), 1);
}

#[test]
fn a_server_that_is_gone_is_a_remote_error_naming_the_url() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/f.root");
    let err = HttpSource::open_with(&url, options()).unwrap_err();
    assert!(
        matches!(&err, Error::Remote { kind: RemoteKind::ConnectionRefused, what, detail } if what == &url && detail.contains("3 attempts")),
        "{err}"
    );
}

#[test]
fn credentials_are_sent_and_never_shown() {
    let token = "tok-3f9a1c-secret";
    let mock = mock_with(|i, _| (i == 2).then(|| status(401)));
    let source = HttpSource::open_with(
        &mock.url,
        HttpOptions {
            bearer_token: Some(token.into()),
            ..options()
        },
    )
    .unwrap();
    source.read_at(0, 4).unwrap();
    let err = source.read_at(0, 4).unwrap_err();
    let seen = mock.seen();
    let bearer = format!("Bearer {token}");
    assert!(seen
        .iter()
        .all(|s| s.headers.get("authorization") == Some(&bearer)));
    for shown in [err.to_string(), format!("{err:?}"), format!("{source:?}")] {
        assert!(!shown.contains(token), "{shown}");
    }

    // user:password in the URL: basic auth ("alice:p@ss w" in base64), never shown.
    let mock = mock_with(|i, _| (i == 1).then(|| status(403)));
    let url = mock.url.replace("http://", "http://alice:p%40ss%20w@");
    let source = HttpSource::open_with(
        &url,
        HttpOptions {
            bearer_token: Some(token.into()),
            ..options()
        },
    )
    .unwrap();
    let err = source.read_at(0, 4).unwrap_err();
    let seen = mock.seen();
    assert_eq!(
        seen[0].headers.get("authorization").map(String::as_str),
        Some("Basic YWxpY2U6cEBzcyB3"),
        "the URL's credentials win over the token"
    );
    assert_eq!(source.name(), mock.url.replace("http://", "http://***@"));
    for shown in [err.to_string(), format!("{err:?}"), format!("{source:?}")] {
        assert!(
            !shown.contains("p%40ss") && !shown.contains("alice"),
            "{shown}"
        );
    }
}

/// An HTTP date of `time`.
fn http_date(time: std::time::SystemTime) -> String {
    httpdate::fmt_http_date(time)
}

#[test]
fn a_reply_that_no_longer_names_the_version_opened_is_refused() {
    // The open names ETAG; a later reply names none: another version cannot be ruled out.
    let mock = mock_with(|i, seen| {
        (i > 0).then(|| {
            let mut reply = correct_reply(&seen.ranges(), SIZE, ETAG);
            reply.headers.retain(|(name, _)| name != "ETag");
            reply
        })
    });
    let err = open(&mock).read_at(100, 10).unwrap_err();
    assert_eq!(err.remote_kind(), Some(RemoteKind::Changed), "{err}");
    assert!(
        err.to_string()
            .contains("without the ETag it was opened with"),
        "{err}"
    );
}

#[test]
fn a_file_modified_this_second_is_opened_again_once_the_second_passed() {
    // nginx's validators: Last-Modified (and an ETag of it) with one-second resolution,
    // the server's clock in Date. The file was modified just now.
    let modified = std::time::SystemTime::now();
    let mock = Mock::start(move |_, seen| {
        let mut reply = correct_reply(&seen.ranges(), SIZE, "\"6571a9b0-186a0\"");
        reply
            .headers
            .push(header("Last-Modified", http_date(modified)));
        reply
            .headers
            .push(header("Date", http_date(std::time::SystemTime::now())));
        reply
    });
    let options = rntuple_io::SourceOptions::default();
    let (source, edges) = rntuple_io::open_with_edges(&mock.url, &options, 1000, 2000).unwrap();
    // Opened twice: the first answer may have been one of two files written in that
    // second; the second came once it had passed.
    let openings = mock.seen().len();
    assert_eq!(openings, 2, "{:?}", mock.seen());
    assert_eq!(edges.head, file()[..1000]);
    assert_eq!(edges.tail, file()[SIZE - 2000..]);
    let v = source.profile().validators;
    assert_eq!(v.freshness(0), rntuple_io::Freshness::Identified, "{v:?}");
    assert_eq!(source.read_at(5000, 10).unwrap(), file()[5000..5010]);
}

#[test]
fn a_file_rewritten_every_second_is_changed_at_its_origin() {
    // Every answer names a new modification time, the current second.
    let mock = Mock::start(move |_, seen| {
        let now = std::time::SystemTime::now();
        let mut reply = correct_reply(&seen.ranges(), SIZE, ETAG);
        reply.headers.retain(|(name, _)| name != "ETag");
        reply.headers.push(header("Last-Modified", http_date(now)));
        reply.headers.push(header("Date", http_date(now)));
        reply
    });
    let options = rntuple_io::SourceOptions::default();
    let Err(err) = rntuple_io::open_with_edges(&mock.url, &options, 1000, 2000) else {
        panic!("opened a file that changes every second");
    };
    assert_eq!(err.remote_kind(), Some(RemoteKind::Changed), "{err}");
    assert!(err.to_string().contains("changed at its origin"), "{err}");
    assert_eq!(mock.seen().len(), 3, "the first opening and two more");
}

// ------------------------------------------------------------- servers as they are

/// The first and last byte a Range header's one range names in a file of `size` bytes
/// (`a-b`, `a-`, `-n`).
fn resolve(spec: &str, size: u64) -> (u64, u64) {
    let (a, b) = spec.split_once('-').unwrap();
    match (a.is_empty(), b.is_empty()) {
        (true, _) => (size - b.parse::<u64>().unwrap().min(size), size - 1),
        (false, true) => (a.parse().unwrap(), size - 1),
        (false, false) => (a.parse().unwrap(), b.parse::<u64>().unwrap().min(size - 1)),
    }
}

/// The whole file with HTTP 200 (as `python3 -m http.server`), with `etag`.
fn whole(etag: &str) -> Reply {
    Reply {
        status: 200,
        headers: vec![
            header("ETag", etag),
            header("Last-Modified", "Tue, 01 Jul 2025 10:00:00 GMT"),
        ],
        body: file(),
    }
}

/// A server that serves one range per request, and answers a multi-range or a suffix
/// range request with `refusal` (a status; 200: the whole file). A HEAD gets the size.
fn single_ranges_only(refusal: u16) -> Mock {
    Mock::start(move |_, seen| {
        if seen.method == "HEAD" {
            return Reply {
                status: 200,
                headers: vec![
                    header("Content-Length", SIZE.to_string()),
                    header("ETag", ETAG),
                ],
                body: Vec::new(),
            };
        }
        let spec = seen.range().trim_start_matches("bytes=");
        if spec.contains(',') || spec.starts_with('-') {
            return match refusal {
                200 => whole(ETAG),
                code => status(code),
            };
        }
        let (a, b) = resolve(spec, SIZE as u64);
        correct_reply(&[(a, b)], SIZE, ETAG)
    })
}

/// What an observer was told: warnings, and the bytes of each transfer.
#[derive(Default)]
struct Told {
    warnings: Mutex<Vec<String>>,
    transfers: Mutex<Vec<(String, Option<u64>)>>,
    bytes: Arc<Mutex<u64>>,
}

struct Counted(Arc<Mutex<u64>>);

impl Transfer for Counted {
    fn advance(&mut self, bytes: u64) {
        *self.0.lock().unwrap() += bytes;
    }
}

impl TransferObserver for Told {
    fn transfer(&self, what: &str, total: Option<u64>) -> Box<dyn Transfer> {
        self.transfers
            .lock()
            .unwrap()
            .push((what.to_string(), total));
        Box::new(Counted(self.bytes.clone()))
    }
    fn warning(&self, message: &str) {
        self.warnings.lock().unwrap().push(message.to_string());
    }
}

fn observed(told: &Arc<Told>, in_memory: u64) -> HttpOptions {
    HttpOptions {
        observer: Some(Observer(told.clone())),
        whole_in_memory: in_memory,
        ..options()
    }
}

/// The two ends of the file as opening must give them.
fn assert_edges(edges: &Edges, head: u64, tail: u64) {
    let data = file();
    assert_eq!(edges.head, data[..head as usize]);
    assert_eq!(edges.tail_offset, SIZE as u64 - tail);
    assert_eq!(edges.tail, data[SIZE - tail as usize..]);
}

#[test]
fn a_server_ignoring_ranges_is_read_from_one_copy_in_memory_or_a_temporary_file() {
    for in_memory in [1 << 20, 10_000] {
        let mock = Mock::start(|_, _| whole(ETAG));
        let told = Arc::new(Told::default());
        let (source, edges) =
            HttpSource::open_with_edges_using(&mock.url, observed(&told, in_memory), 1000, 2000)
                .unwrap();
        assert_edges(&edges, 1000, 2000);
        assert_eq!(source.size(), SIZE as u64);
        assert_eq!(source.profile().validators.etag.as_deref(), Some(ETAG));
        // Opening: the two ends in one request (the whole file, dropped), then the first
        // bytes (the whole file, copied) and the suffix (dropped) at once.
        assert_eq!(mock.seen().len(), 3);
        let m = source.metrics();
        assert_eq!(
            (m.requests, m.vector_requests),
            (3, 1),
            "every request counts"
        );
        assert_eq!(m.bytes_read, SIZE as u64, "the copy's bytes");
        let asked: Vec<ByteRange> = (0..50).map(|i| r(i * 1999 + 3, 17 + i)).collect();
        assert_eq!(source.read_ranges(&asked).unwrap(), expected(&asked));
        assert_eq!(
            source.read_at(SIZE as u64 - 5, 5).unwrap(),
            file()[SIZE - 5..]
        );
        assert_eq!(mock.seen().len(), 3, "every read from the copy");
        assert!(
            !source.profile().hints.remote,
            "the copy is read as a local file"
        );
        // One warning naming the URL, why and what would do better; one transfer.
        let warnings = told.warnings.lock().unwrap().clone();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with(&format!("{}: the server ignores byte ranges", mock.url))
                && warnings[0].contains("HTTP 206"),
            "{}",
            warnings[0]
        );
        assert_eq!(
            *told.transfers.lock().unwrap(),
            vec![(mock.url.clone(), Some(SIZE as u64))]
        );
        assert_eq!(*told.bytes.lock().unwrap(), SIZE as u64);
        // Another file of the server opened meanwhile: one request, no second warning.
        let (other, edges) =
            HttpSource::open_with_edges_using(&mock.url, observed(&told, in_memory), 1000, 2000)
                .unwrap();
        assert_edges(&edges, 1000, 2000);
        assert_eq!(other.read_at(40_000, 10).unwrap(), file()[40_000..40_010]);
        assert_eq!(mock.seen().len(), 4);
        assert_eq!(told.warnings.lock().unwrap().len(), 1);
        drop(source);
        // Opened with byte 0 only: the same.
        let single = HttpSource::open_with(&mock.url, observed(&told, in_memory)).unwrap();
        assert_eq!(single.read_at(77, 1000).unwrap(), file()[77..1077]);
    }
}

#[test]
fn a_whole_file_answer_mid_read_is_copied_when_it_is_the_same_file_a_change_when_not() {
    // Ranges at opening, then the whole file (a server behind a balancer, say).
    for (etag, changed) in [(ETAG, false), ("\"v2-etag\"", true)] {
        let mock = mock_with(move |i, _| (i > 0).then(|| whole(etag)));
        let told = Arc::new(Told::default());
        let source = HttpSource::open_with(&mock.url, observed(&told, 1 << 20)).unwrap();
        let result = source.read_at(3000, 100);
        if changed {
            let err = result.unwrap_err();
            assert_eq!(err.remote_kind(), Some(RemoteKind::Changed), "{err}");
            let text = err.to_string();
            assert!(
                text.contains("the file changed at its origin while being read (ETag \"v1-etag\" became \"v2-etag\")"),
                "{text}"
            );
            assert_eq!(
                *told.bytes.lock().unwrap(),
                0,
                "a changed file is not copied"
            );
            // Not served from anything afterwards either.
            assert!(source.read_at(10, 10).is_err());
        } else {
            assert_eq!(result.unwrap(), file()[3000..3100]);
            let asked = [r(5, 5), r(90_000, 100)];
            assert_eq!(source.read_ranges(&asked).unwrap(), expected(&asked));
            assert_eq!(mock.seen().len(), 2);
        }
    }
    // The same validators but another size: a change.
    let mock = mock_with(|i, _| {
        (i > 0).then(|| {
            let mut reply = whole(ETAG);
            reply.body.push(0);
            reply
        })
    });
    let err = open(&mock).read_at(0, 10).unwrap_err();
    assert_eq!(err.remote_kind(), Some(RemoteKind::Changed), "{err}");
}

#[test]
fn servers_refusing_multi_range_and_suffix_ranges_get_single_ranges() {
    for refusal in [400, 416, 501, 200] {
        let mock = single_ranges_only(refusal);
        let told = Arc::new(Told::default());
        let (source, edges) =
            HttpSource::open_with_edges_using(&mock.url, observed(&told, 1 << 20), 1000, 2000)
                .unwrap();
        assert_edges(&edges, 1000, 2000);
        assert_eq!(source.profile().validators.etag.as_deref(), Some(ETAG));
        let ranges: Vec<String> = mock.seen().iter().map(|s| s.range().to_string()).collect();
        // The two ends at once, refused; the first bytes and the suffix at once; the
        // suffix refused, the tail by its offsets.
        assert_eq!(ranges.len(), 4, "{refusal}: {ranges:?}");
        let m = source.metrics();
        assert_eq!(
            (m.requests, m.vector_requests),
            (4, 1),
            "every request counts"
        );
        assert_eq!(m.bytes_read, 1000 + 2000);
        assert_eq!(ranges[0], "bytes=0-999,-2000");
        assert_eq!(ranges[3], format!("bytes={}-{}", SIZE - 2000, SIZE - 1));
        let asked: Vec<ByteRange> = (0..20).map(|i| r(i * 4000 + 7, 100 + i)).collect();
        assert_eq!(source.read_ranges(&asked).unwrap(), expected(&asked));
        assert_eq!(mock.seen().len(), 4 + 20, "single ranges only");
        // Another file of the server meanwhile: no request it would refuse.
        let (_other, edges) =
            HttpSource::open_with_edges_using(&mock.url, observed(&told, 1 << 20), 1000, 2000)
                .unwrap();
        assert_edges(&edges, 1000, 2000);
        let seen = mock.seen();
        let last: Vec<&str> = seen[24..].iter().map(Seen::range).collect();
        assert_eq!(
            last,
            [
                "bytes=0-999",
                &*format!("bytes={}-{}", SIZE - 2000, SIZE - 1)
            ]
        );
        assert!(
            told.warnings.lock().unwrap().is_empty(),
            "ranges work: no warning"
        );
    }
}

#[test]
fn a_content_range_without_the_size_takes_it_from_a_head() {
    let mock = Mock::start(|_, seen| {
        if seen.method == "HEAD" {
            return Reply {
                status: 200,
                headers: vec![header("Content-Length", SIZE.to_string())],
                body: Vec::new(),
            };
        }
        let mut reply = correct_reply(&seen.ranges(), SIZE, ETAG);
        reply.headers[0] = header("Content-Range", "bytes 0-0/*");
        reply
    });
    let source = open(&mock);
    assert_eq!(source.size(), SIZE as u64);
    let methods: Vec<String> = mock.seen().iter().map(|s| s.method.clone()).collect();
    assert_eq!(methods, ["GET", "HEAD"]);
}

#[test]
fn an_unasked_for_compressed_reply_says_so() {
    // At opening (a multipart reply) and on a later read (one range).
    let gzip = |mut reply: Reply| {
        reply.headers.push(header("Content-Encoding", "gzip"));
        reply.body = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
        reply
    };
    let edges_mock = Mock::start(move |_, seen| {
        let ranges: Vec<(u64, u64)> = seen
            .range()
            .trim_start_matches("bytes=")
            .split(',')
            .map(|spec| resolve(spec, SIZE as u64))
            .collect();
        gzip(correct_reply(&ranges, SIZE, ETAG))
    });
    let read_mock =
        mock_with(move |i, seen| (i > 0).then(|| gzip(correct_reply(&seen.ranges(), SIZE, ETAG))));
    let errors = [
        HttpSource::open_with_edges_using(&edges_mock.url, options(), 1000, 2000)
            .map(|_| ())
            .unwrap_err(),
        open(&read_mock).read_at(10, 10).map(|_| ()).unwrap_err(),
    ];
    for (err, url) in errors.iter().zip([&edges_mock.url, &read_mock.url]) {
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("remote read of {url} failed: "))
                && text.contains("sent the file compressed (Content-Encoding: gzip)")
                && text.contains("turn the compression off"),
            "{text}"
        );
        assert!(!text.contains("line longer"), "{text}");
    }
    assert_eq!(edges_mock.seen().len(), 1, "not retried");
}
