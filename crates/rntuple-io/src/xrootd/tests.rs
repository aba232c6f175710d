//! The client against fake servers: threads on loopback that speak the protocol
//! correctly by default and misbehave on purpose where a test says so (split and
//! interleaved responses, waits, redirects, errors, truncated or oversized frames) —
//! faults a real server cannot be made to produce on demand. Expected bytes come from
//! the fake file itself.

use super::protocol::{request, status, ResponseHeader, ATTN_ASYNC_RESPONSE, READV_ELEMENT_LEN};
use super::{auth, XRootDOptions, XRootDSource};
use crate::error::{Error, RemoteKind};
use crate::test_bytes::test_bytes;
use crate::tried::{expect_tried, expect_tried_ending};
use crate::{ByteRange, NetworkOptions, ReadAt, ReadRanges, RetryPolicy};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The fake server's connection: plain TCP, or TLS once the client asked for it.
enum FakeStream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
    Switching,
}

impl FakeStream {
    fn shutdown(&self, how: Shutdown) -> std::io::Result<()> {
        match self {
            FakeStream::Plain(s) => s.shutdown(how),
            FakeStream::Tls(s) => s.get_ref().shutdown(how),
            FakeStream::Switching => Ok(()),
        }
    }

    fn start_tls(&mut self, config: Arc<rustls::ServerConfig>) {
        if let FakeStream::Plain(tcp) = std::mem::replace(self, FakeStream::Switching) {
            let conn = rustls::ServerConnection::new(config).unwrap();
            *self = FakeStream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp)));
        }
    }
}

impl Read for FakeStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            FakeStream::Plain(s) => s.read(buf),
            FakeStream::Tls(s) => s.read(buf),
            FakeStream::Switching => Ok(0),
        }
    }
}

impl Write for FakeStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            FakeStream::Plain(s) => s.write(buf),
            FakeStream::Tls(s) => s.write(buf),
            FakeStream::Switching => Ok(0),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            FakeStream::Plain(s) => s.flush(),
            FakeStream::Tls(s) => s.flush(),
            FakeStream::Switching => Ok(()),
        }
    }
}

/// A request as the fake server decodes it.
#[derive(Debug, Clone)]
struct Msg {
    stream: [u8; 2],
    code: u16,
    params: [u8; 16],
    payload: Vec<u8>,
}

impl Msg {
    fn read_args(&self) -> (u64, usize) {
        let offset = u64::from_be_bytes(self.params[4..12].try_into().unwrap());
        let len = u32::from_be_bytes(self.params[12..16].try_into().unwrap()) as usize;
        (offset, len)
    }

    fn readv_args(&self) -> Vec<(u64, usize)> {
        self.payload
            .chunks(READV_ELEMENT_LEN)
            .map(|e| {
                let len = u32::from_be_bytes(e[4..8].try_into().unwrap()) as usize;
                let offset = u64::from_be_bytes(e[8..16].try_into().unwrap());
                (offset, len)
            })
            .collect()
    }
}

/// What the fake server serves and how.
struct Config {
    data: Vec<u8>,
    /// The size `kXR_stat` reports, per connection index (default: the data's size).
    stat_size: Box<dyn Fn(usize) -> u64 + Send + Sync>,
    /// The `kXR_query` config answer.
    query_answer: String,
    /// The security part of the `kXR_login` response.
    login_security: String,
    /// Whether `kXR_open` answers the stat information when asked (`kXR_retstat`).
    retstat: bool,
    /// TLS, offered when set (`kXR_haveTLS`) and started when the client wants it.
    tls: Option<Arc<rustls::ServerConfig>>,
}

impl Config {
    fn new(data: Vec<u8>) -> Self {
        let size = data.len() as u64;
        Config {
            data,
            stat_size: Box::new(move |_| size),
            query_answer: "1024\n2097136\n".into(),
            login_security: String::new(),
            retstat: true,
            tls: None,
        }
    }
}

/// One accepted connection of the fake server.
struct Peer {
    stream: FakeStream,
    index: usize,
    config: Arc<Config>,
}

impl Peer {
    fn send(&mut self, stream: [u8; 2], status: u16, body: &[u8]) {
        let head = ResponseHeader {
            stream_id: stream,
            status,
            body_len: body.len() as u32,
        };
        let mut out = head.encode().to_vec();
        out.extend_from_slice(body);
        let _ = self.stream.write_all(&out);
    }

    fn file(&self, offset: u64, len: usize) -> Vec<u8> {
        let data = &self.config.data;
        let start = (offset as usize).min(data.len());
        let end = (start + len).min(data.len());
        data[start..end].to_vec()
    }

    /// A `kXR_readv` response body for `segments` (headers and data).
    fn readv_body(&self, segments: &[(u64, usize)]) -> Vec<u8> {
        let mut body = Vec::new();
        for &(offset, len) in segments {
            let bytes = self.file(offset, len);
            body.extend_from_slice(&[0, 0, 0, 1]);
            body.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            body.extend_from_slice(&offset.to_be_bytes());
            body.extend_from_slice(&bytes);
        }
        body
    }

    fn stat_text(&self) -> Vec<u8> {
        let size = (self.config.stat_size)(self.index);
        format!("42 {size} 16 1700000000\0").into_bytes()
    }

    /// The answer of a correct server.
    fn answer(&mut self, m: &Msg) {
        match m.code {
            request::PROTOCOL => match self.config.tls.clone() {
                // kXR_wantTLS: answer kXR_haveTLS | kXR_gotoTLS, then switch.
                Some(tls) if m.params[4] & 0x04 != 0 => {
                    self.send(m.stream, status::OK, &[0, 0, 5, 0x20, 0xc0, 0, 0, 1]);
                    self.stream.start_tls(tls);
                }
                Some(_) => self.send(m.stream, status::OK, &[0, 0, 5, 0x20, 0x80, 0, 0, 1]),
                None => self.send(m.stream, status::OK, &[0, 0, 5, 0x20, 0, 0, 0, 1]),
            },
            request::LOGIN => {
                let mut body = vec![7u8; 16];
                body.extend_from_slice(self.config.login_security.as_bytes());
                self.send(m.stream, status::OK, &body)
            }
            request::AUTH | request::CLOSE => self.send(m.stream, status::OK, &[]),
            request::OPEN => {
                let mut body = vec![0, 0, 0, 1];
                if self.config.retstat && m.params[2..4] == [0x04, 0x10] {
                    body.extend_from_slice(&[0; 8]);
                    body.extend_from_slice(&self.stat_text());
                }
                self.send(m.stream, status::OK, &body)
            }
            request::STAT => {
                let text = self.stat_text();
                self.send(m.stream, status::OK, &text)
            }
            request::QUERY => {
                let answer = self.config.query_answer.clone();
                self.send(m.stream, status::OK, answer.as_bytes())
            }
            request::READ => {
                let (offset, len) = m.read_args();
                let bytes = self.file(offset, len);
                self.send(m.stream, status::OK, &bytes)
            }
            request::READV => {
                let body = self.readv_body(&m.readv_args());
                self.send(m.stream, status::OK, &body)
            }
            other => panic!("fake server: unexpected request {other}"),
        }
    }
}

/// A hook sees every request first; `true` means it answered (or dropped) it.
type Hook = dyn Fn(&mut Peer, &Msg) -> bool + Send + Sync;

/// A fake server on a loopback port.
struct FakeServer {
    port: u16,
    connections: Arc<AtomicUsize>,
    log: Arc<Mutex<Vec<(usize, Msg)>>>,
    stop: Arc<AtomicBool>,
}

impl FakeServer {
    fn start(
        config: Config,
        hook: impl Fn(&mut Peer, &Msg) -> bool + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let config = Arc::new(config);
        let hook: Arc<Hook> = Arc::new(hook);
        let (c, l, s) = (connections.clone(), log.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let index = c.fetch_add(1, Ordering::SeqCst);
                let peer = Peer {
                    stream: FakeStream::Plain(stream),
                    index,
                    config: config.clone(),
                };
                let (hook, log) = (hook.clone(), l.clone());
                std::thread::spawn(move || serve(peer, &*hook, &log));
            }
        });
        FakeServer {
            port,
            connections,
            log,
            stop,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("root://127.0.0.1:{}/{path}", self.port)
    }

    fn requests(&self, code: u16) -> Vec<(usize, Msg)> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, m)| m.code == code)
            .cloned()
            .collect()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(mut peer: Peer, hook: &Hook, log: &Mutex<Vec<(usize, Msg)>>) {
    let mut hello = [0u8; 20];
    if peer.stream.read_exact(&mut hello).is_err() {
        return;
    }
    assert_eq!(
        &hello[12..],
        &[0, 0, 0, 4, 0, 0, 0x07, 0xdc],
        "handshake words"
    );
    let mut reply = ResponseHeader {
        stream_id: [0, 0],
        status: status::OK,
        body_len: 8,
    }
    .encode()
    .to_vec();
    reply.extend_from_slice(&[0, 0, 5, 0x20, 0, 0, 0, 1]);
    if peer.stream.write_all(&reply).is_err() {
        return;
    }
    loop {
        let mut head = [0u8; 24];
        if peer.stream.read_exact(&mut head).is_err() {
            return;
        }
        let dlen = u32::from_be_bytes(head[20..24].try_into().unwrap()) as usize;
        let mut payload = vec![0u8; dlen];
        if peer.stream.read_exact(&mut payload).is_err() {
            return;
        }
        let msg = Msg {
            stream: [head[0], head[1]],
            code: u16::from_be_bytes([head[2], head[3]]),
            params: head[4..20].try_into().unwrap(),
            payload,
        };
        log.lock().unwrap().push((peer.index, msg.clone()));
        if !hook(&mut peer, &msg) {
            peer.answer(&msg);
        }
    }
}

fn no_hook(_: &mut Peer, _: &Msg) -> bool {
    false
}

/// Options with `attempts` attempts, every timeout `timeout_ms`, and short backoffs.
fn quick(attempts: u32, timeout_ms: u64) -> XRootDOptions {
    let timeout = Duration::from_millis(timeout_ms);
    XRootDOptions {
        retry: RetryPolicy {
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(20),
            ..RetryPolicy::new(NetworkOptions {
                connect_timeout: timeout,
                first_byte_timeout: timeout,
                idle_timeout: timeout,
                retries: attempts.saturating_sub(1),
                ..NetworkOptions::default()
            })
        },
        parallel_requests: 1,
    }
}

fn slice(data: &[u8], r: ByteRange) -> &[u8] {
    &data[r.offset as usize..(r.offset + r.len) as usize]
}

/// Reads the `(offset, length)` ranges from `src` in one call and checks each against
/// `data`.
fn read_and_check(src: &XRootDSource, data: &[u8], ranges: &[(u64, u64)]) {
    let ranges: Vec<ByteRange> = ranges
        .iter()
        .map(|&(offset, len)| ByteRange { offset, len })
        .collect();
    let chunks = src.read_ranges(&ranges).unwrap();
    assert_eq!(chunks.len(), ranges.len());
    for (r, c) in ranges.iter().zip(&chunks) {
        assert_eq!(c.as_slice(), slice(data, *r));
    }
}

/// The `what` and `detail` of the error of `result`, which must be a remote error of
/// `kind` (a failed test otherwise).
fn remote_error<T: std::fmt::Debug>(
    result: Result<T, Error>,
    kind: RemoteKind,
) -> (String, String) {
    match result {
        Err(Error::Remote {
            kind: got,
            what,
            detail,
        }) if got == kind => (what, detail),
        other => panic!("expected {kind:?}, got {other:?}"),
    }
}

/// Checks that `result` failed with a remote error of `kind` whose `what` contains
/// `what_has` and whose detail contains each of `detail_has`.
fn expect_remote<T: std::fmt::Debug>(
    result: Result<T, Error>,
    kind: RemoteKind,
    what_has: &str,
    detail_has: &[&str],
) {
    let (what, detail) = remote_error(result, kind);
    assert!(what.contains(what_has), "{what}");
    for part in detail_has {
        assert!(detail.contains(part), "{part:?} not in {detail}");
    }
}

/// Waits until `done` holds, for at most 30 s (a test's synchronisation on a count,
/// not a guess at how long something takes).
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Counts an arrival at a barrier of `n` and waits (at most 30 s) until `n` arrived:
/// a request held until another one came in on another connection.
fn arrive_and_wait(arrived: &AtomicUsize, n: usize) {
    arrived.fetch_add(1, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(30);
    while arrived.load(Ordering::SeqCst) < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn reads_split_to_the_servers_limits() {
    let data = test_bytes(9 << 20);
    let mut config = Config::new(data.clone());
    config.query_answer = "3\n1000\n".into();
    // A single read is answered only once another one arrived (on another connection:
    // the one it came on waits here), so that a piece goes over a connection of its own
    // only if it was sent on one.
    let reads = Arc::new(AtomicUsize::new(0));
    let arrived = reads.clone();
    let server = FakeServer::start(config, move |_, m| {
        if m.code == request::READ {
            arrive_and_wait(&arrived, 2);
        }
        false
    });
    let mut options = quick(2, 5000);
    options.parallel_requests = 3;
    let src = XRootDSource::open_with(&server.url("/f.root"), options).unwrap();
    assert_eq!(src.size(), data.len() as u64);
    let hints = src.profile().hints;
    assert_eq!(
        (hints.max_ranges_per_request, hints.max_range_bytes),
        (3, 1000)
    );
    assert_eq!(hints.parallel_requests, 3);
    assert!(hints.remote);

    // 2 + 1 + 3 + 1 + 1 pieces of at most 1000 bytes: 8 segments, 3 vector requests.
    let last = data.len() as u64 - 1;
    let ranges = [
        (0, 1500),
        (77, 10),
        (5000, 2001),
        (last, 1),
        (123, 0),
        (10, 1000),
    ];
    read_and_check(&src, &data, &ranges);
    let m = src.metrics();
    assert_eq!(m.vector_requests, 3);
    assert_eq!(m.requests, 3);
    assert_eq!(m.ranges, 8);
    assert_eq!(m.bytes_read, 1500 + 10 + 2001 + 1 + 1000);
    let segments: Vec<usize> = server
        .requests(request::READV)
        .iter()
        .map(|(_, m)| m.readv_args().len())
        .collect();
    assert_eq!(segments.iter().sum::<usize>(), 8);
    assert!(segments.iter().all(|&n| n <= 3), "{segments:?}");

    // A read over 8 MiB goes in two kXR_read, over two connections (once the spare
    // sessions, opened in the background after the first, are in the pool).
    wait_until("the spare sessions in the pool", || src.pool.slots() == 3);
    assert_eq!(server.requests(request::OPEN).len(), 3);
    let big = src.read_at(100, (9 << 20) - 200).unwrap();
    assert!(big == data[100..(9 << 20) - 100]);
    let m = src.metrics();
    assert_eq!((m.requests, m.vector_requests), (5, 3));
    assert_eq!(server.requests(request::READ).len(), 2);
    let conns: std::collections::BTreeSet<usize> = server
        .requests(request::READ)
        .iter()
        .map(|(c, _)| *c)
        .collect();
    assert_eq!(conns.len(), 2, "the two pieces went over two connections");

    // Past the end: an error before any request.
    assert!(matches!(
        src.read_at(data.len() as u64 - 1, 2),
        Err(Error::Truncated { .. })
    ));
    assert_eq!(server.requests(request::READ).len(), 2);
}

/// The request code that follows `m` in the same burst from the client, if any bytes
/// are already waiting.
fn code_sent_with(peer: &mut Peer) -> Option<u16> {
    let FakeStream::Plain(tcp) = &peer.stream else {
        return None;
    };
    // Bytes sent in one write are here at once; a request sent by the next write of the
    // same burst within this long (a request that waits for an answer never comes:
    // the answer waits for this).
    tcp.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    let mut head = [0u8; 4];
    let seen = tcp.peek(&mut head).ok();
    tcp.set_read_timeout(None).ok()?;
    (seen? == 4).then(|| u16::from_be_bytes([head[2], head[3]]))
}

#[test]
fn sessions_are_set_up_in_few_round_trips() {
    // What arrived together with what: (connection, request, the next request's code).
    type Bursts = Arc<Mutex<Vec<(usize, u16, Option<u16>)>>>;
    let bursts: Bursts = Arc::default();
    let seen = bursts.clone();
    // Over 8 MiB: two kXR_read pieces.
    let data = test_bytes(9 << 20);
    let server = FakeServer::start(Config::new(data.clone()), move |peer, m| {
        if matches!(m.code, request::PROTOCOL | request::LOGIN | request::OPEN) {
            let next = code_sent_with(peer);
            seen.lock().unwrap().push((peer.index, m.code, next));
        }
        false
    });
    let mut options = quick(2, 5000);
    options.parallel_requests = 2;
    let src = XRootDSource::open_with(&server.url("/f.root"), options).unwrap();
    // The spare session opens in the background, before anything is read.
    wait_until("the spare session in the pool", || src.pool.slots() == 2);
    let opens: Vec<usize> = server
        .requests(request::OPEN)
        .iter()
        .map(|(c, _)| *c)
        .collect();
    assert_eq!(opens, vec![0, 1]);
    assert!(server.requests(request::READ).is_empty());
    let whole = src.read_at(0, data.len() as u64).unwrap();
    assert!(whole == data);
    let bursts = bursts.lock().unwrap().clone();
    let on = |conn: usize, code: u16| {
        bursts
            .iter()
            .find(|(c, m, _)| (*c, *m) == (conn, code))
            .map(|(_, _, next)| *next)
    };
    // The first session: the login goes with the handshake, the readv-limits query
    // with the open (the open itself must wait for the login's answer).
    assert_eq!(
        on(0, request::PROTOCOL),
        Some(Some(request::LOGIN)),
        "{bursts:?}"
    );
    assert_eq!(on(0, request::LOGIN), Some(None), "{bursts:?}");
    assert_eq!(
        on(0, request::OPEN),
        Some(Some(request::QUERY)),
        "{bursts:?}"
    );
    // The next one, to a server known to need no authentication: all in one burst.
    assert_eq!(
        on(1, request::PROTOCOL),
        Some(Some(request::LOGIN)),
        "{bursts:?}"
    );
    assert_eq!(
        on(1, request::LOGIN),
        Some(Some(request::OPEN)),
        "{bursts:?}"
    );
}

#[test]
fn a_wait_for_a_pipelined_login_or_open_sends_it_again() {
    let data = test_bytes(9 << 20);
    // The first login (sent with the handshake) and the first open of the spare session
    // (sent with its login) are told to come back at once.
    let waited = Arc::new(Mutex::new(Vec::new()));
    let seen = waited.clone();
    let server = FakeServer::start(Config::new(data.clone()), move |peer, m| {
        let first = (peer.index, m.code);
        let wait = matches!(first, (0, request::LOGIN) | (1, request::OPEN))
            && !seen.lock().unwrap().contains(&first);
        if wait {
            seen.lock().unwrap().push(first);
            peer.send(m.stream, status::WAIT, &[0, 0, 0, 0]);
        }
        wait
    });
    let mut options = quick(2, 5000);
    options.parallel_requests = 2;
    let src = XRootDSource::open_with(&server.url("/f.root"), options).unwrap();
    wait_until("the spare session's second open", || {
        server.requests(request::OPEN).len() >= 3
    });
    let whole = src.read_at(0, data.len() as u64).unwrap();
    assert!(whole == data);
    assert_eq!(waited.lock().unwrap().len(), 2, "both waits happened");
    let count = |conn: usize, code: u16| {
        server
            .requests(code)
            .iter()
            .filter(|(c, _)| *c == conn)
            .count()
    };
    // Each was sent again, and the session went on.
    assert_eq!(count(0, request::LOGIN), 2);
    assert_eq!(count(1, request::OPEN), 2);
    assert_eq!(count(1, request::LOGIN), 1);
}

#[test]
fn oksofar_parts_are_joined() {
    let data = test_bytes(50_000);
    let server = FakeServer::start(Config::new(data.clone()), |peer, m| match m.code {
        request::READ => {
            let (offset, len) = m.read_args();
            let bytes = peer.file(offset, len);
            let third = bytes.len() / 3;
            peer.send(m.stream, status::OK_SO_FAR, &bytes[..third]);
            peer.send(m.stream, status::OK_SO_FAR, &bytes[third..2 * third]);
            peer.send(m.stream, status::OK, &bytes[2 * third..]);
            true
        }
        request::READV => {
            // One segment per kXR_oksofar frame, then an empty kXR_ok.
            for seg in m.readv_args() {
                let body = peer.readv_body(&[seg]);
                peer.send(m.stream, status::OK_SO_FAR, &body);
            }
            peer.send(m.stream, status::OK, &[]);
            true
        }
        _ => false,
    });
    let src = XRootDSource::open_with(&server.url("//f"), quick(1, 5000)).unwrap();
    assert!(src.read_at(1000, 30_000).unwrap() == data[1000..31_000]);
    read_and_check(&src, &data, &[(5, 100), (40_000, 9_000), (5, 100)]);
    let m = src.metrics();
    assert_eq!(m.bytes_read, 30_000 + 9_200);
    assert_eq!((m.requests, m.vector_requests), (2, 1));
}

#[test]
fn interleaved_responses_are_routed_by_stream_id() {
    let data = test_bytes(20_000);
    let mut config = Config::new(data.clone());
    config.query_answer = "2\n100000\n".into();
    let held: Arc<Mutex<Vec<Msg>>> = Arc::default();
    let held2 = held.clone();
    let server = FakeServer::start(config, move |peer, m| {
        if m.code != request::READV {
            return false;
        }
        let mut held = held2.lock().unwrap();
        held.push(m.clone());
        if held.len() < 3 {
            return true;
        }
        // All three in flight: answer the last first, each in two frames, interleaved.
        let order: Vec<Msg> = held.drain(..).rev().collect();
        for m in &order {
            let body = peer.readv_body(&m.readv_args()[..1]);
            peer.send(m.stream, status::OK_SO_FAR, &body);
        }
        for m in &order {
            let body = peer.readv_body(&m.readv_args()[1..]);
            peer.send(m.stream, status::OK, &body);
        }
        true
    });
    let src = XRootDSource::open_with(&server.url("//f"), quick(1, 5000)).unwrap();
    let ranges: Vec<(u64, u64)> = (0..6).map(|i| (3000 * i + 7, 500 + i)).collect();
    read_and_check(&src, &data, &ranges);
    let streams: std::collections::BTreeSet<[u8; 2]> = server
        .requests(request::READV)
        .iter()
        .map(|(_, m)| m.stream)
        .collect();
    assert_eq!(
        streams.len(),
        3,
        "three requests in flight on distinct stream ids"
    );
    assert_eq!(src.metrics().vector_requests, 3);
}

#[test]
fn wait_and_deferred_responses() {
    let data = test_bytes(10_000);
    let reads = Arc::new(AtomicUsize::new(0));
    let reads2 = reads.clone();
    let server = FakeServer::start(Config::new(data.clone()), move |peer, m| {
        if m.code != request::READ {
            return false;
        }
        match reads2.fetch_add(1, Ordering::SeqCst) {
            // First: come back in one second.
            0 => peer.send(
                m.stream,
                status::WAIT,
                &[0, 0, 0, 1, b'b', b'u', b's', b'y'],
            ),
            // Second: the answer comes later as kXR_attn/kXR_asynresp.
            1 => {
                peer.send(m.stream, status::WAIT_RESP, &[0, 0, 0, 1]);
                std::thread::sleep(Duration::from_millis(300));
                let (offset, len) = m.read_args();
                let bytes = peer.file(offset, len);
                let mut body = ATTN_ASYNC_RESPONSE.to_be_bytes().to_vec();
                body.extend_from_slice(&[0; 4]);
                let inner = ResponseHeader {
                    stream_id: m.stream,
                    status: status::OK,
                    body_len: bytes.len() as u32,
                };
                body.extend_from_slice(&inner.encode());
                body.extend_from_slice(&bytes);
                peer.send([0, 0], status::ATTN, &body);
            }
            _ => return false,
        }
        true
    });
    let src = XRootDSource::open_with(&server.url("//f"), quick(1, 5000)).unwrap();
    let start = Instant::now();
    assert!(src.read_at(10, 5000).unwrap() == data[10..5010]);
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "the wait was honoured"
    );
    assert!(src.read_at(20, 3000).unwrap() == data[20..3020]);
    assert_eq!(reads.load(Ordering::SeqCst), 3);
    assert_eq!(src.metrics().bytes_read, 8000);
}

#[test]
fn a_deferred_response_that_never_comes_fails_clearly() {
    let server = FakeServer::start(Config::new(test_bytes(100)), |peer, m| {
        if m.code == request::READ {
            peer.send(m.stream, status::WAIT_RESP, &[0, 0, 0, 0]);
            return true;
        }
        false
    });
    let src = XRootDSource::open_with(&server.url("//f"), quick(1, 300)).unwrap();
    let err = src.read_at(0, 10).unwrap_err().to_string();
    assert!(
        err.contains("kXR_waitresp") && err.contains("never came"),
        "{err}"
    );
}

#[test]
fn a_response_deferred_again_and_again_is_given_up() {
    // kXR_waitresp, then the deferred answer is another kXR_waitresp, 100 ms later,
    // for as long as the client listens: each bounded, the chain bounded in total.
    let server = FakeServer::start(Config::new(test_bytes(100)), |peer, m| {
        if m.code != request::READ {
            return false;
        }
        peer.send(m.stream, status::WAIT_RESP, &[0, 0, 0, 0]);
        for _ in 0..200 {
            std::thread::sleep(Duration::from_millis(100));
            let mut body = ATTN_ASYNC_RESPONSE.to_be_bytes().to_vec();
            body.extend_from_slice(&[0; 4]);
            let inner = ResponseHeader {
                stream_id: m.stream,
                status: status::WAIT_RESP,
                body_len: 4,
            };
            body.extend_from_slice(&inner.encode());
            body.extend_from_slice(&[0, 0, 0, 0]);
            peer.send([0, 0], status::ATTN, &body);
        }
        true
    });
    let src = XRootDSource::open_with(&server.url("//f"), quick(1, 300)).unwrap();
    let start = Instant::now();
    let err = src.read_at(0, 10).unwrap_err();
    assert_eq!(err.remote_kind(), Some(RemoteKind::TimedOut), "{err}");
    let err = err.to_string();
    assert!(
        err.contains("kept deferring its response (kXR_waitresp"),
        "{err}"
    );
    took_between(start, 0, 15_000, &err);
}

#[test]
fn redirects_are_followed_with_their_opaque_data() {
    let data = test_bytes(4096);
    let target = FakeServer::start(Config::new(data.clone()), no_hook);
    let target_port = target.port;
    let manager = FakeServer::start(Config::new(Vec::new()), move |peer, m| {
        if m.code == request::OPEN {
            let mut body = u32::from(target_port).to_be_bytes().to_vec();
            body.extend_from_slice(b"127.0.0.1?tried=mgr");
            peer.send(m.stream, status::REDIRECT, &body);
            return true;
        }
        false
    });
    let src =
        XRootDSource::open_with(&manager.url("//store/f.root?authz=x"), quick(1, 5000)).unwrap();
    assert_eq!(src.size(), 4096);
    assert!(src.read_at(1, 4000).unwrap() == data[1..4001]);
    let opens = target.requests(request::OPEN);
    assert_eq!(opens.len(), 1);
    assert_eq!(opens[0].1.payload, b"/store/f.root?authz=x&tried=mgr");
    assert!(manager.requests(request::READ).is_empty());
    assert_eq!(target.requests(request::READ).len(), 1);

    // A server that redirects to itself forever.
    let looping: Arc<Mutex<u16>> = Arc::default();
    let looping2 = looping.clone();
    let lo = FakeServer::start(Config::new(Vec::new()), move |peer, m| {
        if m.code == request::OPEN {
            let port = *looping2.lock().unwrap();
            let mut body = u32::from(port).to_be_bytes().to_vec();
            body.extend_from_slice(b"127.0.0.1");
            peer.send(m.stream, status::REDIRECT, &body);
            return true;
        }
        false
    });
    *looping.lock().unwrap() = lo.port;
    let err = XRootDSource::open_with(&lo.url("//f"), quick(1, 5000)).unwrap_err();
    assert!(err.to_string().contains("more than 10 redirects"), "{err}");
    assert_eq!(lo.requests(request::OPEN).len(), 11);
}

fn error_body(code: u32, message: &str) -> Vec<u8> {
    let mut body = code.to_be_bytes().to_vec();
    body.extend_from_slice(message.as_bytes());
    body.push(0);
    body
}

/// A hook answering every request of `code` with the error `error(m)` (its number and
/// message).
fn refused(
    code: u16,
    error: impl Fn(&Msg) -> (u32, String) + Send + Sync + 'static,
) -> impl Fn(&mut Peer, &Msg) -> bool + Send + Sync + 'static {
    move |peer, m| {
        if m.code != code {
            return false;
        }
        let (number, message) = error(m);
        peer.send(m.stream, status::ERROR, &error_body(number, &message));
        true
    }
}

#[test]
fn server_errors_become_not_found_or_remote() {
    let hook = refused(request::OPEN, |m| {
        if m.payload.starts_with(b"/missing") {
            (3011, "no such file or directory".into())
        } else {
            (3010, "permission denied for /secret".into())
        }
    });
    let server = FakeServer::start(Config::new(Vec::new()), hook);
    expect_remote(
        XRootDSource::open_with(&server.url("//missing.root"), quick(3, 5000)),
        RemoteKind::NotFound,
        "missing.root",
        &["no such file", "kXR_NotFound"],
    );
    expect_remote(
        XRootDSource::open_with(&server.url("//secret"), quick(3, 5000)),
        RemoteKind::PermissionDenied,
        "/secret",
        &["kXR_NotAuthorized", "permission denied"],
    );
    // Permanent errors are not retried.
    assert_eq!(server.requests(request::OPEN).len(), 2);
}

#[test]
fn tokens_in_server_messages_are_scrubbed() {
    // A server quoting the whole request path, opaque part included.
    let hook = refused(request::OPEN, |m| {
        let path = String::from_utf8_lossy(&m.payload).replace("%20", " ");
        (3010, format!("cannot open {path}"))
    });
    let server = FakeServer::start(Config::new(Vec::new()), hook);
    let url = server.url("//f.root?authz=Bearer%20s3cr3tT0ken&other=vis1ble");
    let err = XRootDSource::open_with(&url, quick(1, 5000))
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot open /f.root?authz=***"), "{err}");
    assert!(!err.contains("s3cr3t") && !err.contains("vis1ble"), "{err}");
}

#[test]
fn a_transient_server_error_is_retried() {
    let data = test_bytes(1000);
    let tries = Arc::new(AtomicUsize::new(0));
    let tries2 = tries.clone();
    let server = FakeServer::start(Config::new(data.clone()), move |peer, m| {
        if m.code == request::READ && tries2.fetch_add(1, Ordering::SeqCst) == 0 {
            peer.send(m.stream, status::ERROR, &error_body(3024, "overloaded"));
            return true;
        }
        false
    });
    let src = XRootDSource::open_with(&server.url("//f"), quick(3, 5000)).unwrap();
    assert!(src.read_at(0, 1000).unwrap() == data);
    assert_eq!(tries.load(Ordering::SeqCst), 2);
}

#[test]
fn truncated_frames_reconnect_and_retry() {
    let data = test_bytes(100_000);
    let server = FakeServer::start(Config::new(data.clone()), |peer, m| {
        // The first connection dies in the middle of a data frame.
        if peer.index == 0 && matches!(m.code, request::READ | request::READV) {
            let head = ResponseHeader {
                stream_id: m.stream,
                status: status::OK,
                body_len: 60_000,
            };
            let _ = peer.stream.write_all(&head.encode());
            let _ = peer.stream.write_all(&peer.file(0, 1000));
            let _ = peer.stream.shutdown(Shutdown::Both);
            return true;
        }
        false
    });
    let src = XRootDSource::open_with(&server.url("//f"), quick(3, 5000)).unwrap();
    assert!(src.read_at(500, 60_000).unwrap() == data[500..60_500]);
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
    // The new connection opened the file again (its size came with the open).
    assert_eq!(server.requests(request::OPEN).len(), 2);
    assert!(server.requests(request::STAT).is_empty());
    // The bytes of the broken attempt are not counted.
    assert_eq!(src.metrics().bytes_read, 60_000);

    // A server that always breaks: a Remote error after the attempts.
    let bad = FakeServer::start(Config::new(data.clone()), |peer, m| {
        if m.code == request::READ {
            let head = ResponseHeader {
                stream_id: m.stream,
                status: status::OK,
                body_len: 10,
            };
            let _ = peer.stream.write_all(&head.encode()[..5]);
            let _ = peer.stream.shutdown(Shutdown::Both);
            return true;
        }
        false
    });
    let src = XRootDSource::open_with(&bad.url("//f"), quick(3, 5000)).unwrap();
    match src.read_at(0, 10) {
        Err(Error::Remote { detail, .. }) => {
            let tried = expect_tried(&detail);
            assert!(tried.fault.contains("closed"), "{detail}");
            assert_eq!((tried.attempts, tried.retries), (3, 2));
        }
        other => panic!("expected Remote, got {other:?}"),
    }
    assert_eq!(bad.connections.load(Ordering::SeqCst), 3);
}

#[test]
fn a_server_claiming_more_bytes_than_asked_is_an_error() {
    let data = test_bytes(1000);
    let server = FakeServer::start(Config::new(data), |peer, m| {
        match m.code {
            request::READ => {
                // Claims 4 GiB: rejected from the header, nothing allocated.
                let head = ResponseHeader {
                    stream_id: m.stream,
                    status: status::OK,
                    body_len: u32::MAX,
                };
                let _ = peer.stream.write_all(&head.encode());
            }
            request::READV => {
                // A segment longer than the one asked for.
                let (offset, len) = m.readv_args()[0];
                let mut body = peer.readv_body(&[(offset, len + 1)]);
                body.truncate(READV_ELEMENT_LEN);
                body.extend_from_slice(&vec![0; len + 1]);
                peer.send(m.stream, status::OK, &body);
            }
            _ => return false,
        }
        true
    });
    let src = XRootDSource::open_with(&server.url("//f"), quick(3, 5000)).unwrap();
    match src.read_at(0, 100) {
        Err(Error::Remote { detail, .. }) => assert!(
            detail.contains("protocol violation")
                && detail.contains("4294967295 bytes for a read of 100"),
            "{detail}"
        ),
        other => panic!("expected Remote, got {other:?}"),
    }
    match src.read_ranges(&[ByteRange {
        offset: 10,
        len: 20,
    }]) {
        Err(Error::Remote { detail, .. }) => {
            assert!(detail.contains("not asked for"), "{detail}")
        }
        other => panic!("expected Remote, got {other:?}"),
    }
    // Violations are not retried.
    assert_eq!(server.requests(request::READ).len(), 1);
    assert_eq!(server.requests(request::READV).len(), 1);
}

#[test]
fn oversized_control_responses_are_rejected() {
    let server = FakeServer::start(Config::new(test_bytes(10)), |peer, m| {
        if m.code == request::LOGIN {
            let head = ResponseHeader {
                stream_id: m.stream,
                status: status::OK,
                body_len: 3_000_000_000,
            };
            let _ = peer.stream.write_all(&head.encode());
            return true;
        }
        false
    });
    let err = XRootDSource::open_with(&server.url("//f"), quick(3, 5000)).unwrap_err();
    assert!(
        err.to_string().contains("3000000000-byte response"),
        "{err}"
    );
}

#[test]
fn short_reads_are_errors() {
    let data = test_bytes(1000);
    let server = FakeServer::start(Config::new(data), |peer, m| {
        match m.code {
            request::READ => {
                let (offset, len) = m.read_args();
                let bytes = peer.file(offset, len / 2);
                peer.send(m.stream, status::OK, &bytes);
            }
            request::READV => {
                let segs = m.readv_args();
                let body = peer.readv_body(&segs[..1]);
                peer.send(m.stream, status::OK, &body);
            }
            _ => return false,
        }
        true
    });
    let src = XRootDSource::open_with(&server.url("//f"), quick(3, 5000)).unwrap();
    let err = src.read_at(0, 100).unwrap_err().to_string();
    assert!(err.contains("returned 50 of 100 bytes"), "{err}");
    let err = src
        .read_ranges(&[
            ByteRange { offset: 0, len: 10 },
            ByteRange {
                offset: 50,
                len: 10,
            },
        ])
        .unwrap_err()
        .to_string();
    assert!(err.contains("1 of 2 segments"), "{err}");
}

#[test]
fn a_file_that_changed_size_across_a_reconnect_is_an_error() {
    let data = test_bytes(5000);
    let mut config = Config::new(data);
    // Sizes from kXR_stat here (a server that ignores kXR_retstat).
    config.retstat = false;
    config.stat_size = Box::new(|conn| if conn == 0 { 5000 } else { 4000 });
    let server = FakeServer::start(config, |peer, m| {
        if m.code == request::READ && peer.index == 0 {
            let _ = peer.stream.shutdown(Shutdown::Both);
            return true;
        }
        false
    });
    let src = XRootDSource::open_with(&server.url("//f"), quick(3, 5000)).unwrap();
    assert_eq!(src.size(), 5000);
    assert_eq!(server.requests(request::STAT).len(), 1);
    match src.read_at(0, 100) {
        Err(Error::Remote { detail, .. }) => assert!(
            detail.contains("file changed") && detail.contains("5000") && detail.contains("4000"),
            "{detail}"
        ),
        other => panic!("expected Remote, got {other:?}"),
    }
}

#[test]
fn unix_authentication_when_asked() {
    let data = test_bytes(300);
    let mut config = Config::new(data.clone());
    config.login_security = "&P=gsi,v:10000&P=unix\0".into();
    let server = FakeServer::start(config, |peer, m| {
        if m.code == request::AUTH {
            // Only unix credentials are acceptable.
            if &m.params[12..16] == b"unix" && m.payload.starts_with(b"unix\0") {
                peer.send(m.stream, status::OK, &[]);
            } else {
                peer.send(
                    m.stream,
                    status::ERROR,
                    &error_body(3030, "bad credentials"),
                );
            }
            return true;
        }
        false
    });
    let src = XRootDSource::open_with(&server.url("//f"), quick(1, 5000)).unwrap();
    assert!(src.read_at(0, 300).unwrap() == data);
    let auths = server.requests(request::AUTH);
    assert_eq!(auths.len(), 1, "gsi is skipped, unix is sent");
    let creds = &auths[0].1.payload;
    assert_eq!(creds.last(), Some(&0));

    let mut config = Config::new(Vec::new());
    config.login_security = "&P=gsi,v:10000&P=krb5\0".into();
    let server = FakeServer::start(config, no_hook);
    match XRootDSource::open_with(&server.url("//f"), quick(1, 5000)) {
        Err(Error::Unsupported(msg)) => assert!(msg.contains("gsi, krb5"), "{msg}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }

    // Credentials the server refuses: permission denied, not retried.
    let mut config = Config::new(Vec::new());
    config.login_security = "&P=unix\0".into();
    let server = FakeServer::start(
        config,
        refused(request::AUTH, |_| (3030, "unknown user".into())),
    );
    expect_remote(
        XRootDSource::open_with(&server.url("//f"), quick(3, 5000)),
        RemoteKind::PermissionDenied,
        "",
        &["kXR_AuthFailed", "unknown user"],
    );
    assert_eq!(server.requests(request::AUTH).len(), 1);
}

#[test]
fn readv_limits_fall_back_to_the_protocol_defaults() {
    let mut config = Config::new(test_bytes(10));
    config.query_answer = "readv_iov_max\nreadv_ior_max\n".into();
    let server = FakeServer::start(config, no_hook);
    let src = XRootDSource::open_with(&server.url("//f"), quick(1, 5000)).unwrap();
    let h = src.profile().hints;
    assert_eq!(
        (h.max_ranges_per_request, h.max_range_bytes),
        (1024, 2_097_136)
    );

    let server = FakeServer::start(
        Config::new(test_bytes(10)),
        refused(request::QUERY, |_| (3013, "not supported".into())),
    );
    let src = XRootDSource::open_with(&server.url("//f"), quick(1, 5000)).unwrap();
    let h = src.profile().hints;
    assert_eq!(
        (h.max_ranges_per_request, h.max_range_bytes),
        (1024, 2_097_136)
    );
}

#[test]
fn the_file_is_closed_when_the_source_is_dropped() {
    let server = FakeServer::start(Config::new(test_bytes(10)), no_hook);
    let src = XRootDSource::open_with(&server.url("//f"), quick(1, 5000)).unwrap();
    assert_eq!(src.read_at(0, 10).unwrap(), test_bytes(10));
    drop(src);
    assert_eq!(server.requests(request::CLOSE).len(), 1);
}

#[test]
fn a_refused_connection_is_a_remote_error_after_retries() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let start = Instant::now();
    let url = format!("root://user:secret@127.0.0.1:{port}//f?authz=token");
    let (what, detail) = remote_error(
        XRootDSource::open_with(&url, quick(3, 1000)),
        RemoteKind::ConnectionRefused,
    );
    assert!(
        !what.contains("secret") && !what.contains("token"),
        "{what}"
    );
    assert!(
        !detail.contains("secret") && !detail.contains("token"),
        "{detail}"
    );
    let tried = expect_tried(&detail);
    assert_eq!((tried.attempts, tried.retries), (3, 2), "{detail}");
    // Refused at once, three times, with backoffs of milliseconds: no timeout waited.
    assert!(start.elapsed() < Duration::from_secs(30));
}

/// A CA and a server certificate for 127.0.0.1 made for one test, as client (trusting
/// that CA only) and server TLS configurations.
struct TestPki {
    client: Arc<rustls::ClientConfig>,
    server: Arc<rustls::ServerConfig>,
}

fn test_pki() -> TestPki {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "rntuple fake CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params
        .subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let cert = params.signed_by(&key, &ca, &ca_key).unwrap();

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let key_der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key_der)
        .unwrap();
    TestPki {
        client: Arc::new(client),
        server: Arc::new(server),
    }
}

const TOKEN: &str = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2ln";

#[test]
fn tls_with_a_ztn_token() {
    let pki = test_pki();
    let data = test_bytes(20_000);
    let mut config = Config::new(data.clone());
    config.tls = Some(pki.server.clone());
    config.login_security = "&P=ztn,0:4096:&P=unix\0".into();
    let server = FakeServer::start(config, |peer, m| {
        if m.code == request::AUTH {
            let ztn = &m.params[12..16] == b"ztn\0" && m.payload == auth::ztn_credentials(TOKEN);
            let unix = &m.params[12..16] == b"unix";
            if ztn || unix {
                peer.send(m.stream, status::OK, &[]);
            } else {
                peer.send(m.stream, status::ERROR, &error_body(3030, "bad token"));
            }
            return true;
        }
        false
    });
    let with_token = |s: &mut super::Settings| {
        s.tls_config = Some(pki.client.clone());
        s.token = Some(TOKEN.to_string());
    };
    let url = format!("roots://127.0.0.1:{}//f", server.port);
    let src = XRootDSource::open_configured(&url, quick(1, 5000), with_token).unwrap();
    assert!(src.read_at(3, 15_000).unwrap() == data[3..15_003]);
    read_and_check(&src, &data, &[(10, 100), (19_000, 1000)]);
    let auths = server.requests(request::AUTH);
    assert_eq!(auths.len(), 1);
    assert_eq!(&auths[0].1.params[12..16], b"ztn\0");

    // Over plain root:// the token stays home: unix is used.
    let plain =
        XRootDSource::open_configured(&server.url("//f"), quick(1, 5000), with_token).unwrap();
    assert!(plain.read_at(0, 100).unwrap() == data[..100]);
    let auths = server.requests(request::AUTH);
    assert_eq!(auths.len(), 2);
    assert_eq!(&auths[1].1.params[12..16], b"unix");
    let sent_in_clear = auths[1]
        .1
        .payload
        .windows(TOKEN.len())
        .any(|w| w == TOKEN.as_bytes());
    assert!(!sent_in_clear);

    // A client trusting another CA refuses the server's certificate, and does not retry.
    let other = test_pki();
    let before = server.connections.load(Ordering::SeqCst);
    let err = XRootDSource::open_configured(&url, quick(3, 5000), |s| {
        s.tls_config = Some(other.client.clone());
    })
    .unwrap_err();
    match err {
        Error::Remote {
            kind: RemoteKind::Tls,
            detail,
            ..
        } => {
            assert!(detail.contains("invalid peer certificate"), "{detail}")
        }
        other => panic!("expected a TLS Remote error, got {other:?}"),
    }
    assert_eq!(server.connections.load(Ordering::SeqCst), before + 1);
}

#[test]
fn roots_needs_a_server_that_offers_tls() {
    let server = FakeServer::start(Config::new(test_bytes(10)), no_hook);
    let url = format!("roots://127.0.0.1:{}//f", server.port);
    match XRootDSource::open_with(&url, quick(3, 5000)) {
        Err(Error::Unsupported(msg)) => assert!(msg.contains("does not offer TLS"), "{msg}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

/// Options with the given timeouts (ms), `retries`, and short backoffs.
fn timeouts(connect_ms: u64, first_byte_ms: u64, idle_ms: u64, retries: u32) -> XRootDOptions {
    XRootDOptions {
        retry: RetryPolicy {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(100),
            ..RetryPolicy::new(NetworkOptions {
                connect_timeout: Duration::from_millis(connect_ms),
                first_byte_timeout: Duration::from_millis(first_byte_ms),
                idle_timeout: Duration::from_millis(idle_ms),
                retries,
                ..NetworkOptions::default()
            })
        },
        parallel_requests: 1,
    }
}

/// A timeout that must not fire in a test (ms): the fake servers stall as long.
const NEVER: u64 = 60_000;
/// The upper bound (ms) of a test that a timeout must end early: half of [`NEVER`],
/// tens of times what the timeouts under test add up to.
const GENEROUS: u64 = 30_000;

fn took_between(start: Instant, low_ms: u64, high_ms: u64, what: &str) {
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(low_ms) && took <= Duration::from_millis(high_ms),
        "{what}: took {took:?}, expected {low_ms}-{high_ms} ms"
    );
}

/// Checks the failure `err` of two attempts (one retry), each given up after 0.5 s,
/// since `start`: it took at least the two waits, and its fault (before what was tried)
/// ends with `fault_end`.
fn timed_out_twice(start: Instant, err: Error, fault_end: &str) {
    let err = err.to_string();
    println!("{err}");
    took_between(start, 1000, GENEROUS, &err);
    expect_tried_ending(&err, fault_end, 2, 1);
}

#[test]
fn an_open_never_answered_runs_into_the_first_byte_timeout_then_the_retries() {
    // The session is set up; the kXR_open is swallowed.
    let server = FakeServer::start(Config::new(test_bytes(100)), |_, m| m.code == request::OPEN);
    let start = Instant::now();
    let err = XRootDSource::open_with(&server.url("/f.root"), timeouts(NEVER, 500, NEVER, 1));
    timed_out_twice(
        start,
        err.unwrap_err(),
        &format!(
            "waiting for 127.0.0.1:{}: no answer within 0.5 s (first-byte timeout, \
         RNTUPLE_FIRST_BYTE_TIMEOUT or --first-byte-timeout)",
            server.port
        ),
    );
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
    assert_eq!(server.requests(request::OPEN).len(), 2);
}

/// A hook answering every `kXR_read` with its header and the first `sent` bytes of its
/// body, each `every` after the previous one, then nothing for [`NEVER`] ms.
fn paced_reads(sent: usize, every: Duration) -> impl Fn(&mut Peer, &Msg) -> bool {
    move |peer, m| {
        if m.code != request::READ {
            return false;
        }
        let (offset, len) = m.read_args();
        let bytes = peer.file(offset, len);
        let head = ResponseHeader {
            stream_id: m.stream,
            status: status::OK,
            body_len: bytes.len() as u32,
        };
        let _ = peer.stream.write_all(&head.encode());
        for b in &bytes[..sent.min(bytes.len())] {
            std::thread::sleep(every);
            let _ = peer.stream.write_all(std::slice::from_ref(b));
        }
        if sent < bytes.len() {
            std::thread::sleep(Duration::from_millis(NEVER));
        }
        true
    }
}

#[test]
fn a_response_that_stalls_mid_frame_runs_into_the_idle_timeout() {
    let server = FakeServer::start(
        Config::new(test_bytes(100)),
        paced_reads(10, Duration::ZERO),
    );
    let src =
        XRootDSource::open_with(&server.url("/f.root"), timeouts(NEVER, NEVER, 500, 1)).unwrap();
    let start = Instant::now();
    let err = src.read_at(0, 50).unwrap_err();
    timed_out_twice(
        start,
        err,
        &format!(
            "reading from 127.0.0.1:{}: the answer stalled for 0.5 s (idle timeout, \
         RNTUPLE_IDLE_TIMEOUT or --idle-timeout)",
            server.port
        ),
    );
    assert_eq!(server.requests(request::READ).len(), 2);
}

#[test]
fn a_response_that_keeps_moving_never_times_out() {
    // 20 bytes 100 ms apart: 2 s, twice the first-byte and idle timeouts, each wait a
    // tenth of them.
    let data = test_bytes(100);
    let server = FakeServer::start(
        Config::new(data.clone()),
        paced_reads(usize::MAX, Duration::from_millis(100)),
    );
    let src =
        XRootDSource::open_with(&server.url("/f.root"), timeouts(1000, 1000, 1000, 0)).unwrap();
    let start = Instant::now();
    assert_eq!(src.read_at(10, 20).unwrap(), data[10..30]);
    took_between(start, 2000, GENEROUS, "a dribbling read");
    assert_eq!(server.requests(request::READ).len(), 1);
}

#[test]
fn a_response_that_crawls_runs_into_the_low_speed_limit() {
    // A byte every 40 ms (25 bytes a second), each far within the idle timeout, against
    // a limit of 100 bytes a second over 0.5 s (the 300 bytes would take 12 s an attempt).
    let server = FakeServer::start(
        Config::new(test_bytes(1000)),
        paced_reads(usize::MAX, Duration::from_millis(40)),
    );
    let mut options = timeouts(NEVER, 5000, 5000, 1);
    options.retry.network.speed_limit = 100;
    options.retry.network.speed_time = Duration::from_millis(500);
    let src = XRootDSource::open_with(&server.url("/f.root"), options).unwrap();
    let start = Instant::now();
    let err = src.read_at(0, 300).unwrap_err();
    assert_eq!(err.remote_kind(), Some(RemoteKind::TimedOut), "{err}");
    timed_out_twice(
        start,
        err,
        &format!(
            "reading from 127.0.0.1:{}: fewer than 100 bytes a second arrived over 0.5 s \
         (low-speed limit, RNTUPLE_SPEED_LIMIT and RNTUPLE_SPEED_TIME or --speed-limit \
         and --speed-time)",
            server.port
        ),
    );
    assert_eq!(server.requests(request::READ).len(), 2);
}

#[test]
fn a_tls_handshake_that_never_ends_runs_into_the_connect_timeout() {
    let pki = test_pki();
    let mut config = Config::new(test_bytes(100));
    config.tls = Some(pki.server.clone());
    // kXR_gotoTLS is answered, and then the server says nothing.
    let server = FakeServer::start(config, |peer, m| {
        if m.code == request::PROTOCOL {
            peer.send(m.stream, status::OK, &[0, 0, 5, 0x20, 0xc0, 0, 0, 1]);
            std::thread::sleep(Duration::from_millis(NEVER));
            return true;
        }
        false
    });
    let url = format!("roots://127.0.0.1:{}//f", server.port);
    let start = Instant::now();
    let err = XRootDSource::open_configured(&url, timeouts(500, NEVER, NEVER, 1), |s| {
        s.tls_config = Some(pki.client.clone());
    });
    timed_out_twice(
        start,
        err.unwrap_err(),
        &format!(
            "TLS handshake with 127.0.0.1:{}: no connection within 0.5 s (connect timeout, \
         RNTUPLE_CONNECT_TIMEOUT or --connect-timeout)",
            server.port
        ),
    );
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
}
