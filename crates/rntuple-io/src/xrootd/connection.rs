//! One XRootD connection: TCP (and TLS), the session set-up (handshake, protocol, login,
//! authentication, open, stat), and a multiplexer that keeps several requests in flight
//! under distinct stream ids and routes every response frame (`kXR_oksofar` parts,
//! `kXR_wait`, deferred `kXR_attn` responses) to its request.
//!
//! Every byte received lands in a buffer whose size the client chose: data frames are
//! checked against the bytes still expected before they are read, control responses
//! are capped at [`CONTROL_BODY_MAX`].

mod setup;

use super::auth;
use super::protocol::{
    decode_login, decode_open, decode_wait_seconds, initial_handshake, protocol_flags,
    server_flags, status, FileHandle, ProtocolInfo, ReadvSegmentHeader, Redirect, Request,
    ResponseHeader, ServerError, StatInfo, ATTN_ASYNC_RESPONSE, READV_ELEMENT_LEN,
    RESPONSE_HEADER_LEN,
};
use super::tls;
use crate::error::RemoteKind;
use crate::speed::SpeedMeter;
use crate::{IoMetrics, NetworkOptions, TimeoutKind};
use std::collections::HashMap;
use std::io::{BufReader, ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The largest body accepted for a response that carries no file data (login, stat,
/// error messages, redirects, ...).
pub(crate) const CONTROL_BODY_MAX: u32 = 64 << 10;
/// Requests kept in flight on one connection.
const MAX_IN_FLIGHT: usize = 8;
/// Request bytes kept unanswered on one connection: small enough that requests never
/// fill both socket buffers while the server is blocked writing responses.
const MAX_IN_FLIGHT_REQUEST_BYTES: usize = 64 << 10;
/// A request may be told to wait (`kXR_wait`) for at most this many first-byte timeouts
/// in total.
const WAIT_LIMIT_IN_TIMEOUTS: u32 = 10;

/// The answer to a request sent along with another: its body, or why there is none.
pub(crate) type Answer = Result<Vec<u8>, Fault>;

/// Why an exchange with the server did not succeed.
#[derive(Debug)]
pub(crate) enum Fault {
    /// The connection broke or was refused (what sort of failure, and what happened):
    /// reconnect and try again.
    Broken(RemoteKind, String),
    /// A timeout of the [`NetworkOptions`] ran out while `doing` something: reconnect
    /// and try again.
    TimedOut {
        /// Which timeout.
        kind: TimeoutKind,
        /// What was being done (`"waiting for host:1094"`).
        doing: String,
    },
    /// The server broke the protocol (malformed or oversized frames): not retried.
    Violation(String),
    /// The server answered `kXR_error`.
    Server(ServerError),
    /// The server sent the client elsewhere.
    Redirect(Redirect),
    /// The server delivered fewer bytes than asked: the file changed or was truncated.
    Short(String),
    /// Something this client cannot do (TLS not offered, unknown authentication).
    Unsupported(String),
    /// The server's certificate is not trusted, or the TLS handshake was refused: not
    /// retried.
    Tls(String),
    /// The server refused every credential this client offered: not retried.
    Denied(String),
}

/// The fault an I/O error `e` while doing `context` means; a timeout is one of `kind`
/// (the timeout the socket was armed with).
fn broken(context: &str, e: &std::io::Error, kind: TimeoutKind) -> Fault {
    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
        Fault::TimedOut {
            kind,
            doing: context.to_string(),
        }
    } else if e.kind() == ErrorKind::UnexpectedEof {
        Fault::Broken(
            RemoteKind::ConnectionReset,
            format!("{context}: connection closed by the server"),
        )
    } else {
        Fault::Broken(
            RemoteKind::of_connection_error(e.kind()),
            format!("{context}: {e}"),
        )
    }
}

/// How to reach a server and present ourselves.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Whether the connection must be encrypted (`roots://`).
    pub tls: bool,
    /// The user name sent at login.
    pub user: String,
    /// The timeouts: connecting and the session's set-up (TCP, TLS, handshake,
    /// `kXR_protocol`, login, authentication), the wait for a response, stalls within
    /// one.
    pub network: NetworkOptions,
    /// The TLS configuration to use instead of the system's CAs (tests).
    pub tls_config: Option<Arc<rustls::ClientConfig>>,
    /// The bearer token to send instead of the one found as WLCG says (tests).
    pub token: Option<String>,
}

/// The byte stream under the protocol: plain TCP or TLS over TCP.
enum Transport {
    Plain(TcpStream),
    Tls(Box<tls::TlsStream>),
    /// Only while switching to TLS.
    Switching,
    /// A recorded server (for fuzzing and tests): its bytes are the responses; what the
    /// client sends is dropped. Compiled where the `fuzz` module is (which also needs
    /// `http`), its only user.
    #[cfg(any(all(test, feature = "http"), feature = "fuzzing"))]
    Replay(std::io::Cursor<Vec<u8>>),
}

impl Transport {
    fn tcp(&self) -> Option<&TcpStream> {
        match self {
            Transport::Plain(s) => Some(s),
            Transport::Tls(s) => Some(s.get_ref()),
            Transport::Switching => None,
            #[cfg(any(all(test, feature = "http"), feature = "fuzzing"))]
            Transport::Replay(_) => None,
        }
    }
}

impl Read for Transport {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Transport::Plain(s) => s.read(buf),
            Transport::Tls(s) => s.read(buf),
            Transport::Switching => Err(ErrorKind::NotConnected.into()),
            #[cfg(any(all(test, feature = "http"), feature = "fuzzing"))]
            Transport::Replay(r) => r.read(buf),
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Transport::Plain(s) => s.write(buf),
            Transport::Tls(s) => s.write(buf),
            Transport::Switching => Err(ErrorKind::NotConnected.into()),
            #[cfg(any(all(test, feature = "http"), feature = "fuzzing"))]
            Transport::Replay(_) => Ok(buf.len()),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Transport::Plain(s) => s.flush(),
            Transport::Tls(s) => s.flush(),
            Transport::Switching => Err(ErrorKind::NotConnected.into()),
            #[cfg(any(all(test, feature = "http"), feature = "fuzzing"))]
            Transport::Replay(_) => Ok(()),
        }
    }
}

/// Where the bytes of a response go.
pub(crate) enum Sink<'a> {
    /// A control response, kept in memory (at most [`CONTROL_BODY_MAX`] bytes).
    Body(Vec<u8>),
    /// A `kXR_read`: the bytes land in `out`, in order.
    Read {
        /// The destination; its length is the length asked for.
        out: &'a mut [u8],
        /// Bytes received so far.
        filled: usize,
    },
    /// A `kXR_readv`: every segment lands in its own destination.
    ReadV(Vec<Segment<'a>>),
}

/// One segment of a vector read.
pub(crate) struct Segment<'a> {
    /// Its offset in the file.
    pub offset: u64,
    /// The destination; its length is the length asked for.
    pub out: &'a mut [u8],
    /// Whether its bytes arrived.
    pub done: bool,
}

impl Sink<'_> {
    /// Forgets what arrived (the request is being sent again).
    fn reset(&mut self) {
        match self {
            Sink::Body(b) => b.clear(),
            Sink::Read { filled, .. } => *filled = 0,
            Sink::ReadV(segments) => segments.iter_mut().for_each(|s| s.done = false),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum CallState {
    /// Not sent yet.
    Queued,
    /// Sent; the response has not (fully) arrived.
    InFlight,
    /// Told to wait (`kXR_wait`): send again at this time.
    WaitUntil(Instant),
    /// Told the response comes later (`kXR_waitresp`): give up at this time.
    AwaitAsync(Instant),
    /// Answered.
    Done,
    /// Ended by an error, a redirect or a short answer: not done.
    Failed,
}

/// One request and where its response goes.
pub(crate) struct Call<'a> {
    request: Request,
    /// The response's destination (and, for control requests, the response itself).
    pub sink: Sink<'a>,
    state: CallState,
    encoded_len: usize,
    sent_at: Instant,
    waited: Duration,
    payload_bytes: u64,
}

impl<'a> Call<'a> {
    /// A request whose response goes to `sink`.
    pub(crate) fn new(request: Request, sink: Sink<'a>) -> Self {
        Call {
            request,
            sink,
            state: CallState::Queued,
            encoded_len: 0,
            sent_at: Instant::now(),
            waited: Duration::ZERO,
            payload_bytes: 0,
        }
    }

    /// Whether the full response arrived.
    pub(crate) fn is_done(&self) -> bool {
        self.state == CallState::Done
    }

    fn take_body(&mut self) -> Vec<u8> {
        match &mut self.sink {
            Sink::Body(b) => std::mem::take(b),
            _ => Vec::new(),
        }
    }
}

/// An open connection (and, once [`Connection::open_file_and`] succeeded, an open file).
pub(crate) struct Connection {
    io: BufReader<Transport>,
    peer: String,
    network: NetworkOptions,
    /// While the session is being set up: when the connect timeout runs out. Every wait
    /// until then is bounded by it, and a timeout is the connect timeout's.
    setup_deadline: Option<Instant>,
    /// The low-speed limit's meter of the exchange under way: started by the first byte
    /// of its responses, stopped by a server's `kXR_wait` or `kXR_waitresp` (a wait it
    /// announced is not slowness).
    meter: Option<SpeedMeter>,
    next_stream: u16,
    /// The open file, if any.
    pub handle: Option<FileHandle>,
    /// Whether the server asked this session to authenticate.
    pub authenticated: bool,
}

impl Connection {
    /// Whether the connection is encrypted.
    pub(crate) fn is_encrypted(&self) -> bool {
        matches!(self.io.get_ref(), Transport::Tls(_))
    }

    /// Opens `path` (with its `?opaque` part) read only, and returns its `kXR_stat`.
    /// `also` (a request that needs no open file, such as a configuration query) goes
    /// out in the same write, a round trip saved; its answer is returned (`Err` if the
    /// server refused it, `None` if it was not answered).
    pub(crate) fn open_file_and(
        &mut self,
        path: &str,
        also: Option<Request>,
    ) -> Result<(StatInfo, Option<Answer>), Fault> {
        let mut calls = vec![Call::new(
            Request::Open {
                path: path.to_string(),
            },
            Sink::Body(Vec::new()),
        )];
        calls.extend(also.map(|r| Call::new(r, Sink::Body(Vec::new()))));
        let outcome = self.exchange(&mut calls, None);
        let open_done = calls[0].is_done();
        let also_answer = match (calls.get_mut(1), &outcome) {
            (None, _) => None,
            (Some(c), _) if c.is_done() => Some(Ok(c.take_body())),
            (Some(_), Err(Fault::Server(e))) if open_done => Some(Err(Fault::Server(e.clone()))),
            // Not answered for another reason: as if it had not been asked.
            (Some(_), _) => None,
        };
        if !open_done {
            return Err(outcome.err().unwrap_or_else(|| {
                Fault::Violation(format!("{}: the open was not answered", self.peer))
            }));
        }
        if let Err(fault @ (Fault::Broken(..) | Fault::Violation(_))) = outcome {
            return Err(fault);
        }
        let body = calls[0].take_body();
        drop(calls);
        Ok((self.opened(&body)?, also_answer))
    }

    /// Takes the file handle and stat from an open's answer `body`.
    pub(crate) fn opened(&mut self, body: &[u8]) -> Result<StatInfo, Fault> {
        let (handle, stat) =
            decode_open(body).map_err(|e| Fault::Violation(format!("{}: {e}", self.peer)))?;
        self.handle = Some(handle);
        if let Some(stat) = stat {
            return Ok(stat);
        }
        // A server that ignored kXR_retstat: one more round trip.
        let body = self.control(Request::Stat { handle })?;
        StatInfo::decode(&body).map_err(|e| Fault::Violation(format!("{}: {e}", self.peer)))
    }

    /// Sends one control request and returns its response body.
    pub(crate) fn control(&mut self, request: Request) -> Result<Vec<u8>, Fault> {
        let mut calls = [Call::new(request, Sink::Body(Vec::new()))];
        self.exchange(&mut calls, None)?;
        Ok(calls[0].take_body())
    }

    /// Closes the open file; faults are ignored (the connection is dropped anyway).
    pub(crate) fn close_file(&mut self) {
        if let Some(handle) = self.handle.take() {
            let short = Duration::from_secs(2)
                .min(self.network.idle_timeout)
                .max(Duration::from_millis(1));
            if let Some(tcp) = self.io.get_ref().tcp() {
                let _ = tcp.set_read_timeout(Some(short));
                let _ = tcp.set_write_timeout(Some(short));
            }
            let _ = self.control(Request::Close { handle });
        }
    }

    fn take_stream_id(&mut self) -> [u8; 2] {
        // Stream id 0 is reserved for unsolicited messages.
        self.next_stream = self.next_stream.checked_add(1).unwrap_or(1);
        self.next_stream.to_be_bytes()
    }

    /// Runs `calls` on this connection, several at a time, until every one is answered.
    /// Data calls are recorded in `metrics` (one record per request). A `kXR_error` or
    /// redirect of one call lets the others finish before it is returned, so that the
    /// connection stays usable; a broken connection or protocol violation returns at
    /// once (the connection must then be dropped).
    pub(crate) fn exchange(
        &mut self,
        calls: &mut [Call<'_>],
        metrics: Option<&IoMetrics>,
    ) -> Result<(), Fault> {
        let mut routes: HashMap<[u8; 2], usize> = HashMap::new();
        let mut first_fault: Option<Fault> = None;
        // A new exchange: its low-speed window starts with its first response byte.
        self.meter = None;
        loop {
            // Send what fits in the window (nothing new once a call failed).
            let now = Instant::now();
            let mut in_flight = 0usize;
            let mut in_flight_bytes = 0usize;
            for c in calls.iter() {
                if matches!(c.state, CallState::InFlight | CallState::AwaitAsync(_)) {
                    in_flight += 1;
                    in_flight_bytes += c.encoded_len;
                }
            }
            if first_fault.is_none() {
                for (i, call) in calls.iter_mut().enumerate() {
                    let due = match call.state {
                        CallState::Queued => true,
                        CallState::WaitUntil(t) => t <= now,
                        _ => false,
                    };
                    if !due {
                        continue;
                    }
                    let stream = self.take_stream_id();
                    let bytes = call.request.encode(stream);
                    let fits = in_flight == 0
                        || (in_flight < MAX_IN_FLIGHT
                            && in_flight_bytes + bytes.len() <= MAX_IN_FLIGHT_REQUEST_BYTES);
                    if !fits {
                        break;
                    }
                    let kind = self.stall_kind();
                    self.io
                        .get_mut()
                        .write_all(&bytes)
                        .map_err(|e| broken(&format!("sending to {}", self.peer), &e, kind))?;
                    call.sink.reset();
                    call.payload_bytes = 0;
                    call.state = CallState::InFlight;
                    call.encoded_len = bytes.len();
                    call.sent_at = Instant::now();
                    routes.insert(stream, i);
                    in_flight += 1;
                    in_flight_bytes += bytes.len();
                }
            }
            let waiting_to_resend = calls
                .iter()
                .filter_map(|c| match c.state {
                    CallState::WaitUntil(t) => Some(t),
                    _ => None,
                })
                .min();
            if in_flight == 0 {
                match (waiting_to_resend, first_fault.is_some()) {
                    (Some(t), false) => {
                        std::thread::sleep(t.saturating_duration_since(Instant::now()));
                        continue;
                    }
                    _ => break,
                }
            }
            let fault = self.receive(
                calls,
                &mut routes,
                waiting_to_resend.filter(|_| first_fault.is_none()),
            );
            match fault {
                Ok(Some((i, fault))) => {
                    calls[i].state = CallState::Failed;
                    first_fault.get_or_insert(fault);
                }
                Ok(None) => {}
                Err(f) => return Err(f),
            }
            if let Some(m) = metrics {
                for c in calls.iter_mut() {
                    if c.state == CallState::Done && c.encoded_len != 0 {
                        let vectored = match &c.sink {
                            Sink::Read { .. } => Some(false),
                            Sink::ReadV(_) => Some(true),
                            Sink::Body(_) => None,
                        };
                        if let Some(vectored) = vectored {
                            let ranges = match &c.sink {
                                Sink::ReadV(s) => s.len() as u64,
                                _ => 1,
                            };
                            m.record(vectored, ranges, c.payload_bytes, c.sent_at);
                        }
                        // Recorded once.
                        c.encoded_len = 0;
                    }
                }
            }
        }
        match first_fault {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    /// Reads one response frame and applies it to its call. Returns the call's fault if
    /// the frame ended it with an error or redirect; `Err` if the connection is unusable.
    /// `resend_at`: when a waiting call is due, so that reading does not sleep past it.
    fn receive(
        &mut self,
        calls: &mut [Call<'_>],
        routes: &mut HashMap<[u8; 2], usize>,
        resend_at: Option<Instant>,
    ) -> Result<Option<(usize, Fault)>, Fault> {
        let Some(mut head) = self.read_header(calls, resend_at)? else {
            return Ok(None);
        };
        if head.status == status::ATTN {
            if head.body_len < 4 {
                return Err(self.violation("sent a kXR_attn message without an action"));
            }
            let mut action = [0u8; 4];
            self.read_into(&mut action)?;
            if u32::from_be_bytes(action) != ATTN_ASYNC_RESPONSE {
                // Other messages (kXR_asyncms: text for the user) are skipped.
                self.discard(head.body_len - 4)?;
                return Ok(None);
            }
            if u64::from(head.body_len) < 4 + 4 + RESPONSE_HEADER_LEN as u64 {
                return Err(self.violation("sent a kXR_asynresp message that is too short"));
            }
            let mut inner = [0u8; 4 + RESPONSE_HEADER_LEN];
            self.read_into(&mut inner)?;
            let mut inner_head = [0u8; RESPONSE_HEADER_LEN];
            inner_head.copy_from_slice(&inner[4..]);
            let inner_head = ResponseHeader::decode(&inner_head);
            if inner_head.body_len != head.body_len - 16 {
                return Err(self.violation("sent a kXR_asynresp message whose lengths disagree"));
            }
            head = inner_head;
        }
        let Some(&index) = routes.get(&head.stream_id) else {
            return Err(self.violation(&format!(
                "answered stream {:?}, which has no request in flight",
                head.stream_id
            )));
        };
        let call = &mut calls[index];
        match head.status {
            status::OK | status::OK_SO_FAR => {
                self.read_data(call, head.body_len)?;
                if head.status == status::OK {
                    routes.remove(&head.stream_id);
                    call.state = CallState::Done;
                    if let Some(short) = incomplete(call) {
                        return Ok(Some((index, Fault::Short(short))));
                    }
                } else {
                    call.state = CallState::InFlight;
                }
                Ok(None)
            }
            status::ERROR => {
                routes.remove(&head.stream_id);
                let body = self.read_control_body(head.body_len)?;
                let e = ServerError::decode(&body).map_err(|e| self.violation(&e.0))?;
                Ok(Some((index, Fault::Server(e))))
            }
            status::REDIRECT => {
                routes.remove(&head.stream_id);
                let body = self.read_control_body(head.body_len)?;
                let r = Redirect::decode(&body).map_err(|e| self.violation(&e.0))?;
                Ok(Some((index, Fault::Redirect(r))))
            }
            status::WAIT => {
                routes.remove(&head.stream_id);
                let body = self.read_control_body(head.body_len)?;
                let seconds = decode_wait_seconds(&body).map_err(|e| self.violation(&e.0))?;
                let wait = Duration::from_secs(u64::from(seconds));
                // A wait the server asked for: not slowness.
                self.meter = None;
                let call = &mut calls[index];
                call.waited += wait;
                if call.waited > self.network.first_byte_timeout * WAIT_LIMIT_IN_TIMEOUTS {
                    return Err(Fault::Broken(
                        RemoteKind::TimedOut,
                        format!(
                            "{} kept asking to wait ({} s in total)",
                            self.peer,
                            call.waited.as_secs()
                        ),
                    ));
                }
                call.state = CallState::WaitUntil(Instant::now() + wait);
                Ok(None)
            }
            status::WAIT_RESP => {
                let body = self.read_control_body(head.body_len)?;
                let seconds = decode_wait_seconds(&body).map_err(|e| self.violation(&e.0))?;
                self.meter = None;
                // The response comes as a kXR_attn message; allow the announced time
                // plus the first-byte timeout.
                let allowed =
                    Duration::from_secs(u64::from(seconds)) + self.network.first_byte_timeout;
                let call = &mut calls[index];
                // A deferral announced again (and again): bounded in total, as kXR_wait.
                if matches!(call.state, CallState::AwaitAsync(_)) {
                    call.waited += allowed;
                    if call.waited > self.network.first_byte_timeout * WAIT_LIMIT_IN_TIMEOUTS {
                        return Err(Fault::Broken(
                            RemoteKind::TimedOut,
                            format!(
                                "{} kept deferring its response (kXR_waitresp, {} s allowed in \
                                 total)",
                                self.peer,
                                call.waited.as_secs()
                            ),
                        ));
                    }
                }
                call.state = CallState::AwaitAsync(Instant::now() + allowed);
                Ok(None)
            }
            status::AUTH_MORE => Err(Fault::Unsupported(format!(
                "{} asked for a multi-step authentication, which this client does not support",
                self.peer
            ))),
            other => Err(self.violation(&format!("sent an unexpected response status {other}"))),
        }
    }

    /// Reads a response header. `None`: nothing arrived before `resend_at` (a waiting
    /// call is due). A timeout while a deferred response is still announced is waited
    /// out; any other timeout breaks the connection.
    fn read_header(
        &mut self,
        calls: &[Call<'_>],
        resend_at: Option<Instant>,
    ) -> Result<Option<ResponseHeader>, Fault> {
        let mut head = [0u8; RESPONSE_HEADER_LEN];
        // Waiting for a response (the first byte of its header) is bounded by the
        // first-byte timeout; while the session is set up, by the connect timeout.
        let kind = match self.setup_deadline {
            Some(_) => TimeoutKind::Connect,
            None => TimeoutKind::FirstByte,
        };
        loop {
            let now = Instant::now();
            let wait = match self.setup_deadline {
                Some(deadline) => self.until(deadline)?,
                None => self.network.first_byte_timeout,
            };
            let limit = match resend_at {
                Some(t) => t.saturating_duration_since(now).min(wait),
                None => wait,
            };
            // Within an exchange whose responses started, also the low-speed limit.
            let (limit, by_speed) = match (&self.meter, self.setup_deadline) {
                (Some(meter), None) => meter.bound(limit),
                _ => (limit, false),
            };
            if let Some(tcp) = self.io.get_ref().tcp() {
                let _ = tcp.set_read_timeout(Some(limit.max(Duration::from_millis(1))));
            }
            let first = self.io.read(&mut head);
            match first {
                Ok(0) => {
                    return Err(Fault::Broken(
                        RemoteKind::ConnectionReset,
                        format!("{}: connection closed by the server", self.peer),
                    ))
                }
                Ok(n) => {
                    self.count(n)?;
                    // The rest of the response: stalls are bounded by the idle timeout.
                    self.read_into(&mut head[n..])?;
                    return Ok(Some(ResponseHeader::decode(&head)));
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    let now = Instant::now();
                    if resend_at.is_some_and(|t| t <= now) {
                        return Ok(None);
                    }
                    let awaited = calls.iter().any(
                        |c| matches!(c.state, CallState::AwaitAsync(deadline) if deadline > now),
                    );
                    let waiting = calls
                        .iter()
                        .any(|c| matches!(c.state, CallState::WaitUntil(_)));
                    if awaited || (waiting && resend_at.is_some()) {
                        // Waits the server announced: not slowness.
                        self.meter = None;
                        continue;
                    }
                    if by_speed {
                        return Err(self.too_slow());
                    }
                    if calls
                        .iter()
                        .any(|c| matches!(c.state, CallState::AwaitAsync(_)))
                    {
                        return Err(Fault::Broken(
                            RemoteKind::TimedOut,
                            format!(
                                "{} announced a deferred response (kXR_waitresp) that never came",
                                self.peer
                            ),
                        ));
                    }
                    return Err(broken(&format!("waiting for {}", self.peer), &e, kind));
                }
                Err(e) => return Err(broken(&format!("reading from {}", self.peer), &e, kind)),
            }
        }
    }

    fn read_data(&mut self, call: &mut Call<'_>, body_len: u32) -> Result<(), Fault> {
        let body_len = body_len as usize;
        match &mut call.sink {
            Sink::Body(body) => {
                if body.len() + body_len > CONTROL_BODY_MAX as usize {
                    return Err(self.violation(&format!(
                        "sent a {}-byte response to a control request",
                        body.len() + body_len
                    )));
                }
                let start = body.len();
                body.resize(start + body_len, 0);
                self.read_into(&mut body[start..])?;
            }
            Sink::Read { out, filled } => {
                if body_len > out.len() - *filled {
                    return Err(self.violation(&format!(
                        "sent {} bytes for a read of {} bytes ({} already received)",
                        body_len,
                        out.len(),
                        filled
                    )));
                }
                self.read_into(&mut out[*filled..*filled + body_len])?;
                *filled += body_len;
                call.payload_bytes += body_len as u64;
            }
            Sink::ReadV(segments) => {
                let mut left = body_len;
                let mut next = segments.iter().position(|s| !s.done).unwrap_or(0);
                while left > 0 {
                    if left < READV_ELEMENT_LEN {
                        return Err(self
                            .violation("sent a vector-read frame ending inside a segment header"));
                    }
                    let mut raw = [0u8; READV_ELEMENT_LEN];
                    self.read_into(&mut raw)?;
                    left -= READV_ELEMENT_LEN;
                    let seg = ReadvSegmentHeader::decode(&raw);
                    let matches = |s: &Segment<'_>| {
                        !s.done && s.offset == seg.offset && s.out.len() == seg.len as usize
                    };
                    // Segments come in the order asked; search only if they do not.
                    let found = if segments.get(next).is_some_and(matches) {
                        Some(next)
                    } else {
                        segments.iter().position(matches)
                    };
                    let Some(i) = found else {
                        let shorter = segments.iter().any(|s| {
                            !s.done && s.offset == seg.offset && (seg.len as usize) < s.out.len()
                        });
                        if shorter {
                            return Err(Fault::Short(format!(
                                "{} returned {} bytes at offset {} where more were asked: the file changed or is truncated",
                                self.peer, seg.len, seg.offset
                            )));
                        }
                        return Err(self.violation(&format!(
                            "sent a vector-read segment of {} bytes at offset {} that was not asked for",
                            seg.len, seg.offset
                        )));
                    };
                    if seg.len as usize > left {
                        return Err(self.violation(&format!(
                            "announced a {}-byte segment in a frame with {} bytes left",
                            seg.len, left
                        )));
                    }
                    self.read_into(segments[i].out)?;
                    segments[i].done = true;
                    left -= seg.len as usize;
                    call.payload_bytes += u64::from(seg.len);
                    next = i + 1;
                }
            }
        }
        Ok(())
    }

    fn read_control_body(&mut self, body_len: u32) -> Result<Vec<u8>, Fault> {
        if body_len > CONTROL_BODY_MAX {
            return Err(self.violation(&format!("sent a {body_len}-byte status message")));
        }
        let mut body = vec![0u8; body_len as usize];
        self.read_into(&mut body)?;
        Ok(body)
    }

    /// Reads exactly `buf.len()` bytes of a response: each wait bounded by the idle
    /// timeout (while the session is set up, by the connect timeout's rest), the
    /// exchange by the low-speed limit.
    fn read_into(&mut self, buf: &mut [u8]) -> Result<(), Fault> {
        let mut filled = 0;
        while filled < buf.len() {
            // A read served from the buffer never waits.
            let by_speed = if self.io.buffer().is_empty() {
                self.arm_stall()?
            } else {
                false
            };
            match self.io.read(&mut buf[filled..]) {
                Ok(0) => {
                    let eof = std::io::Error::from(ErrorKind::UnexpectedEof);
                    let context = format!("reading from {}", self.peer);
                    return Err(broken(&context, &eof, self.stall_kind()));
                }
                Ok(n) => {
                    filled += n;
                    self.count(n)?;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e)
                    if by_speed
                        && matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    return Err(self.too_slow());
                }
                Err(e) => {
                    let context = format!("reading from {}", self.peer);
                    return Err(broken(&context, &e, self.stall_kind()));
                }
            }
        }
        Ok(())
    }

    /// Counts `n` bytes of a response against the low-speed limit (once the session is
    /// set up; the connect timeout bounds the set-up as a whole).
    fn count(&mut self, n: usize) -> Result<(), Fault> {
        if self.setup_deadline.is_some() {
            return Ok(());
        }
        let network = self.network;
        let meter = self
            .meter
            .get_or_insert_with(|| SpeedMeter::start(&network));
        meter.record(n as u64).map_err(|_| self.too_slow())
    }

    /// The low-speed limit ran out while reading from the server.
    fn too_slow(&self) -> Fault {
        Fault::TimedOut {
            kind: TimeoutKind::LowSpeed,
            doing: format!("reading from {}", self.peer),
        }
    }

    /// Sets the socket's read timeout for a wait within a response: the idle timeout,
    /// or less when the low-speed limit runs out sooner (then `true`); while the
    /// session is set up, the time left of the connect timeout.
    fn arm_stall(&mut self) -> Result<bool, Fault> {
        let (limit, by_speed) = match (self.setup_deadline, &self.meter) {
            (Some(deadline), _) => (self.until(deadline)?, false),
            (None, Some(meter)) => meter.bound(self.network.idle_timeout),
            (None, None) => (self.network.idle_timeout, false),
        };
        if let Some(tcp) = self.io.get_ref().tcp() {
            let _ = tcp.set_read_timeout(Some(limit.max(Duration::from_millis(1))));
        }
        Ok(by_speed)
    }

    /// The timeout a stall in the middle of a response (or of a write) runs into: the
    /// connect timeout while the session is set up, else the idle timeout.
    fn stall_kind(&self) -> TimeoutKind {
        match self.setup_deadline {
            Some(_) => TimeoutKind::Connect,
            None => TimeoutKind::Idle,
        }
    }

    /// The time left until `deadline` (of the set-up); a connect timeout when none is.
    fn until(&self, deadline: Instant) -> Result<Duration, Fault> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Fault::TimedOut {
                kind: TimeoutKind::Connect,
                doing: format!("setting up the session with {}", self.peer),
            });
        }
        Ok(left)
    }

    /// Sets the socket's read timeout for what comes next: a response's first byte
    /// (`header`: the first-byte timeout) or the bytes of one that started (the idle
    /// timeout); while the session is set up, the time left of the connect timeout.
    fn arm(&mut self, header: bool) -> Result<(), Fault> {
        let limit = match self.setup_deadline {
            Some(deadline) => self.until(deadline)?,
            None if header => self.network.first_byte_timeout,
            None => self.network.idle_timeout,
        };
        if let Some(tcp) = self.io.get_ref().tcp() {
            let _ = tcp.set_read_timeout(Some(limit.max(Duration::from_millis(1))));
            if self.setup_deadline.is_some() {
                let _ = tcp.set_write_timeout(Some(limit.max(Duration::from_millis(1))));
            }
        }
        Ok(())
    }

    fn discard(&mut self, len: u32) -> Result<(), Fault> {
        if len > CONTROL_BODY_MAX {
            return Err(self.violation(&format!("sent a {len}-byte kXR_attn message")));
        }
        let mut sink = vec![0u8; len as usize];
        self.read_into(&mut sink)
    }

    fn violation(&self, what: &str) -> Fault {
        Fault::Violation(format!("protocol violation: {} {what}", self.peer))
    }
}

/// A description of what is missing from a finished call, if anything.
fn incomplete(call: &Call<'_>) -> Option<String> {
    match &call.sink {
        Sink::Body(_) => None,
        Sink::Read { out, filled } => (*filled < out.len()).then(|| {
            format!(
                "the server returned {filled} of {} bytes: the file changed or is truncated",
                out.len()
            )
        }),
        Sink::ReadV(segments) => {
            let missing = segments.iter().filter(|s| !s.done).count();
            (missing > 0).then(|| {
                format!(
                    "the server returned {} of {} segments of a vector read: the file changed or is truncated",
                    segments.len() - missing,
                    segments.len()
                )
            })
        }
    }
}
