//! The timeouts, the low-speed limit and the retries of `NetworkOptions` against
//! servers on loopback that misbehave in time: one that accepts and never answers, one
//! whose accept queue is full (connections never complete), one that stalls in the
//! middle of a body, one that sends a body a byte at a time (fast enough, or crawling).
//! Each for `http://`, `root://` and `s3://` where the fault applies (the S3 and XRootD
//! bodies' pace in the sources' own tests); every test takes a few seconds at most.
//!
//! Nothing here depends on the machine being idle: a message's elapsed seconds are
//! matched by pattern (`common::tried`), an elapsed time is checked against an exact
//! lower bound (a timer never fires early) and an upper bound many times what it
//! separates (the timeouts that must not fire, and the servers' stalls, are a minute),
//! and a body that must keep moving moves ten times faster than its timeouts.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

mod common;

use common::tried::{expect_tried, Tried};
use rntuple_io::RemoteKind;
use rntuple_io::{open_source_with, NetworkOptions, RetryPolicy, S3Source, SourceOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Options with the given timeouts (seconds) and retries.
// The update stays for fields SourceOptions may gain (a cache of remote reads).
#[allow(clippy::needless_update)]
fn options(connect: f64, first_byte: f64, idle: f64, retries: u32) -> SourceOptions {
    SourceOptions {
        network: NetworkOptions {
            connect_timeout: Duration::from_secs_f64(connect),
            first_byte_timeout: Duration::from_secs_f64(first_byte),
            idle_timeout: Duration::from_secs_f64(idle),
            retries,
            ..NetworkOptions::default()
        },
        ..SourceOptions::default()
    }
}

/// A server that accepts every connection, counts it, and never sends a byte (the
/// connections stay open until the server is dropped).
struct Silent {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
}

impl Silent {
    fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().flatten() {
                counted.fetch_add(1, Ordering::SeqCst);
                held.push(stream);
            }
        });
        Silent { addr, connections }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// The error of opening `url` with `options`, which must be a remote failure of `kind`,
/// and how long it took.
fn open_error(url: &str, options: &SourceOptions, kind: RemoteKind) -> (String, Duration) {
    let start = Instant::now();
    let result = open_source_with(url, options);
    let took = start.elapsed();
    match result {
        Ok(_) => panic!("{url}: opened"),
        Err(e) => {
            assert_eq!(e.remote_kind(), Some(kind), "{e}");
            (e.to_string(), took)
        }
    }
}

/// A timeout that must not fire in a test (seconds): the servers stall as long.
const NEVER: f64 = 60.0;
/// The upper bound of a test that a timeout must end early: half of [`NEVER`], tens of
/// times what the timeouts under test add up to.
const GENEROUS: f64 = 30.0;

fn assert_within(took: Duration, low: f64, high: f64, what: &str) {
    assert!(
        took >= Duration::from_secs_f64(low) && took <= Duration::from_secs_f64(high),
        "{what}: took {took:?}, expected {low}-{high} s"
    );
}

/// Checks the failure `err` after `attempts` attempts (`attempts - 1` retries) that
/// `took` so long: at least `low` seconds, far less than the stalls. Returns what it says
/// was tried.
fn given_up(err: &str, took: Duration, low: f64, attempts: u32) -> Tried<'_> {
    println!("{err} [{took:?}]");
    assert_within(took, low, GENEROUS, err);
    let tried = expect_tried(err);
    assert_eq!(
        (tried.attempts, tried.retries),
        (attempts, attempts - 1),
        "{err}"
    );
    tried
}

/// The settings of an S3 client of the endpoint at `addr`, over plain HTTP.
fn s3_vars(addr: SocketAddr) -> Vec<(String, String)> {
    [
        ("AWS_ENDPOINT_URL", format!("http://{addr}")),
        ("AWS_ALLOW_HTTP", "true".to_string()),
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE".to_string()),
        ("AWS_SECRET_ACCESS_KEY", "secret".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The error of opening an S3 object with `vars` and `options`, which must be a timeout,
/// and how long it took.
fn s3_timeout(vars: Vec<(String, String)>, options: &SourceOptions) -> (String, Duration) {
    let policy = RetryPolicy::new(options.network);
    let start = Instant::now();
    let err = S3Source::open_with("s3://bucket/f.root", vars, policy).unwrap_err();
    let took = start.elapsed();
    assert_eq!(err.remote_kind(), Some(RemoteKind::TimedOut), "{err}");
    (err.to_string(), took)
}

#[test]
fn http_a_silent_server_is_given_up_after_the_first_byte_timeout_and_the_retries() {
    let server = Silent::start();
    let url = format!("http://{}/f.root", server.addr);
    let (err, took) = open_error(&url, &options(NEVER, 0.5, NEVER, 1), RemoteKind::TimedOut);
    // Two waits of 0.5 s and a backoff of 0.1 s.
    let tried = given_up(&err, took, 1.0, 2);
    assert_eq!(tried.fault, format!("remote read of {url} failed: opening: no answer within 0.5 s (first-byte timeout, RNTUPLE_FIRST_BYTE_TIMEOUT or --first-byte-timeout)"));
    assert_eq!(server.connections(), 2, "one connection per attempt");
}

#[test]
fn root_a_silent_server_is_given_up_after_the_connect_timeout_and_the_retries() {
    // XRootD's handshake is part of setting the connection up: the connect timeout.
    let server = Silent::start();
    let url = format!("root://{}//f.root", server.addr);
    let (err, took) = open_error(&url, &options(0.5, NEVER, NEVER, 1), RemoteKind::TimedOut);
    let tried = given_up(&err, took, 1.0, 2);
    assert_eq!(tried.fault, format!("remote read of {url} failed: handshake with {}: no connection within 0.5 s (connect timeout, RNTUPLE_CONNECT_TIMEOUT or --connect-timeout)", server.addr));
    assert_eq!(server.connections(), 2, "one connection per attempt");
}

#[test]
fn s3_a_silent_endpoint_is_given_up_after_the_first_byte_timeout_and_the_retries() {
    let server = Silent::start();
    let mut vars = s3_vars(server.addr);
    vars.push(("AWS_REGION".to_string(), "us-east-1".to_string()));
    let (err, took) = s3_timeout(vars, &options(NEVER, 0.5, NEVER, 1));
    let tried = given_up(&err, took, 1.0, 2);
    assert_eq!(tried.fault, "remote read of s3://bucket/f.root failed: HEAD: no answer within 0.5 s (first-byte timeout, RNTUPLE_FIRST_BYTE_TIMEOUT or --first-byte-timeout)");
    assert_eq!(server.connections(), 2, "one connection per attempt");
}

#[test]
fn the_retries_setting_is_the_number_of_attempts_after_the_first() {
    for retries in [0, 2] {
        let server = Silent::start();
        let url = format!("http://{}/f.root", server.addr);
        let (err, took) = open_error(
            &url,
            &options(NEVER, 0.2, NEVER, retries),
            RemoteKind::TimedOut,
        );
        println!("{err} [{took:?}]");
        let attempts = retries + 1;
        assert_eq!(server.connections(), attempts as usize, "{err}");
        let tried = expect_tried(&err);
        assert!(
            tried.fault.ends_with(
                "(first-byte timeout, RNTUPLE_FIRST_BYTE_TIMEOUT or --first-byte-timeout)"
            ),
            "{err}"
        );
        assert_eq!((tried.attempts, tried.retries), (attempts, retries));
    }
}

#[test]
fn a_refused_connection_names_the_attempts() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    // The listener is gone: connections are refused.
    for url in [
        format!("http://{addr}/f.root"),
        format!("root://{addr}//f.root"),
    ] {
        let (err, took) = open_error(
            &url,
            &options(NEVER, NEVER, NEVER, 2),
            RemoteKind::ConnectionRefused,
        );
        // Backoffs of 0.1 and 0.2 s, and no timeout.
        let tried = given_up(&err, took, 0.3, 3);
        assert!(tried.fault.to_lowercase().contains("refused"), "{err}");
    }
}

/// A listener whose accept queue is full: a new connection never completes (its SYN is
/// dropped). The runtime holds the listening socket (created with a backlog of 0).
struct Unreachable {
    addr: SocketAddr,
    _queued: Vec<TcpStream>,
    _listener: tokio::net::TcpListener,
    _runtime: tokio::runtime::Runtime,
}

impl Unreachable {
    fn start() -> Unreachable {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let _context = runtime.enter();
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(0).unwrap();
        let addr = listener.local_addr().unwrap();
        // Fill the queue until a connection no longer completes.
        let mut queued = Vec::new();
        loop {
            match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                Ok(stream) => queued.push(stream),
                Err(_) => break,
            }
            assert!(queued.len() < 64, "the accept queue never filled");
        }
        Unreachable {
            addr,
            _queued: queued,
            _listener: listener,
            _runtime: runtime,
        }
    }
}

#[test]
fn connecting_is_given_up_after_the_connect_timeout() {
    let server = Unreachable::start();
    for (url, doing) in [
        (
            format!("http://{}/f.root", server.addr),
            "opening: connecting",
        ),
        (
            format!("root://{}//f.root", server.addr),
            &*format!("connecting to {}", server.addr),
        ),
    ] {
        let (err, took) = open_error(&url, &options(0.5, NEVER, NEVER, 1), RemoteKind::TimedOut);
        let tried = given_up(&err, took, 1.0, 2);
        assert!(
            tried.fault.ends_with(&format!("{doing}: no connection within 0.5 s (connect timeout, RNTUPLE_CONNECT_TIMEOUT or --connect-timeout)")),
            "{err}"
        );
    }
    let (err, took) = s3_timeout(s3_vars(server.addr), &options(0.5, NEVER, NEVER, 1));
    let tried = given_up(&err, took, 1.0, 2);
    assert!(
        tried.fault.ends_with("HEAD: connecting: no connection within 0.5 s (connect timeout, RNTUPLE_CONNECT_TIMEOUT or --connect-timeout)"),
        "{err}"
    );
}

/// How an [`HttpServer`] sends a body.
#[derive(Clone, Copy)]
enum Pace {
    /// `bytes` bytes, then nothing (the connection stays open for [`NEVER`] seconds).
    StallAfter { bytes: usize },
    /// A byte at a time, `every` apart.
    Dribble { every: Duration },
    /// `bytes` at a time, `every` apart.
    Chunks { bytes: usize, every: Duration },
}

/// An HTTP/1.1 server that answers every request with the whole `data` (HTTP 200, as
/// servers do for a small file asked for in ranges), its body sent as `pace` says.
struct HttpServer {
    url: String,
    requests: Arc<Mutex<usize>>,
}

impl HttpServer {
    fn start(data: Vec<u8>, pace: Pace) -> HttpServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/f.root", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(0));
        let counted = requests.clone();
        let data = Arc::new(data);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (data, counted) = (data.clone(), counted.clone());
                std::thread::spawn(move || serve_paced(stream, &data, pace, &counted));
            }
        });
        HttpServer { url, requests }
    }
}

fn serve_paced(mut stream: TcpStream, data: &[u8], pace: Pace, requests: &Mutex<usize>) {
    let mut request = Vec::new();
    let mut byte = [0u8; 1];
    while !request.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).unwrap_or(0) == 0 {
            return;
        }
        request.push(byte[0]);
    }
    *requests.lock().unwrap() += 1;
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nETag: \"e1\"\r\n\r\n",
        data.len()
    );
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    match pace {
        Pace::StallAfter { bytes } => {
            let _ = stream.write_all(&data[..bytes]);
            std::thread::sleep(Duration::from_secs_f64(NEVER));
        }
        Pace::Dribble { every } => {
            for b in data {
                std::thread::sleep(every);
                if stream.write_all(&[*b]).is_err() {
                    return;
                }
            }
        }
        Pace::Chunks { bytes, every } => {
            for chunk in data.chunks(bytes) {
                std::thread::sleep(every);
                if stream.write_all(chunk).is_err() {
                    return;
                }
            }
        }
    }
}

#[test]
fn http_a_body_that_stalls_is_given_up_after_the_idle_timeout() {
    let data: Vec<u8> = (0..2000u32).map(|i| (i % 251) as u8).collect();
    let server = HttpServer::start(data, Pace::StallAfter { bytes: 700 });
    let (err, took) = open_error(
        &server.url,
        &options(NEVER, NEVER, 0.5, 1),
        RemoteKind::TimedOut,
    );
    let tried = given_up(&err, took, 1.0, 2);
    assert!(
        tried.fault.ends_with("opening: reading the reply: the answer stalled for 0.5 s (idle timeout, RNTUPLE_IDLE_TIMEOUT or --idle-timeout)"),
        "{err}"
    );
    assert_eq!(*server.requests.lock().unwrap(), 2);
}

#[test]
fn http_a_body_that_keeps_moving_never_times_out() {
    // 25 bytes 100 ms apart: 2.5 s in all, more than twice the first-byte and idle
    // timeouts of 1 s, each wait a tenth of them.
    let data: Vec<u8> = (0..25u8).collect();
    let server = HttpServer::start(
        data.clone(),
        Pace::Dribble {
            every: Duration::from_millis(100),
        },
    );
    let start = Instant::now();
    let source = open_source_with(&server.url, &options(1.0, 1.0, 1.0, 0)).unwrap();
    let took = start.elapsed();
    println!("opened in {took:?}");
    assert!(took >= Duration::from_millis(2500), "{took:?}");
    assert_eq!(source.size(), 25);
    assert_eq!(source.read_at(0, 25).unwrap(), data);
    assert_eq!(*server.requests.lock().unwrap(), 1);
}

#[test]
fn http_a_crawling_body_is_given_up_by_the_low_speed_limit() {
    // A byte every 20 ms (50 bytes a second, each wait far within the timeouts of 5 s),
    // against a limit of 200 bytes a second over 1 s: given up after each window.
    let data: Vec<u8> = (0..2000u32).map(|i| (i % 251) as u8).collect();
    let server = HttpServer::start(
        data,
        Pace::Dribble {
            every: Duration::from_millis(20),
        },
    );
    let mut crawl = options(NEVER, 5.0, 5.0, 1);
    crawl.network.speed_limit = 200;
    crawl.network.speed_time = Duration::from_secs(1);
    let (err, took) = open_error(&server.url, &crawl, RemoteKind::TimedOut);
    // Two windows of 1 s and a backoff (the whole body would take 40 s an attempt).
    let tried = given_up(&err, took, 1.5, 2);
    assert!(
        tried.fault.ends_with(
            "opening: reading the reply: fewer than 200 bytes a second arrived over 1 s \
             (low-speed limit, RNTUPLE_SPEED_LIMIT and RNTUPLE_SPEED_TIME or --speed-limit \
             and --speed-time)"
        ),
        "{err}"
    );
    assert_eq!(*server.requests.lock().unwrap(), 2);
}

#[test]
fn http_a_body_above_the_limit_is_read_whole() {
    // 200 bytes every 20 ms (about 10,000 bytes a second) for 2.5 s, against a limit of
    // 1000 bytes a second over 1 s: each window brings ten times what it must, and the
    // body lasts more than two windows.
    let data: Vec<u8> = (0..25_000u32).map(|i| (i % 253) as u8).collect();
    let server = HttpServer::start(
        data.clone(),
        Pace::Chunks {
            bytes: 200,
            every: Duration::from_millis(20),
        },
    );
    let mut fast_enough = options(NEVER, 5.0, 5.0, 0);
    fast_enough.network.speed_limit = 1000;
    fast_enough.network.speed_time = Duration::from_secs(1);
    let start = Instant::now();
    let source = open_source_with(&server.url, &fast_enough).unwrap();
    assert!(start.elapsed() >= Duration::from_millis(2480));
    assert_eq!(source.read_at(0, 25_000).unwrap(), data);
    assert_eq!(*server.requests.lock().unwrap(), 1);
}
