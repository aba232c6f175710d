//! Setting a session up: TCP (and TLS), the handshake, `kXR_protocol`, `kXR_login` and
//! the authentication the server asks for, and the replayed connections of the tests
//! and fuzz harness.

use super::*;

/// The `kXR_login` request of this process.
fn login_request(settings: &Settings) -> Request {
    Request::Login {
        pid: std::process::id(),
        user: settings.user.clone(),
    }
}

impl Connection {
    /// Connects to `host:port` and sets the session up: handshake, `kXR_protocol`
    /// (switching to TLS when asked), `kXR_login` and, when the server asks for it,
    /// `kXR_auth` with the first protocol this client can offer.
    ///
    /// With `early_open` (a path, for a server known to need no authentication) the
    /// `kXR_open` goes out with the login, and its answer is returned: a session in one
    /// round trip.
    pub(crate) fn connect(
        host: &str,
        port: u16,
        settings: &Settings,
        early_open: Option<&str>,
    ) -> Result<(Connection, Option<Answer>), Fault> {
        let peer = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let addrs = (host, port).to_socket_addrs().map_err(|e| {
            Fault::Broken(
                RemoteKind::Connection,
                format!("cannot resolve {peer}: {e}"),
            )
        })?;
        let connect = settings.network.connect_timeout;
        let mut last = Fault::Broken(RemoteKind::Connection, format!("{peer} has no address"));
        let mut stream = None;
        // Each address gets the connect timeout; the set-up that follows must end
        // within the connect timeout of the start of the connection that succeeded.
        for addr in addrs {
            let started = Instant::now();
            match TcpStream::connect_timeout(&addr, connect) {
                Ok(s) => {
                    stream = Some((s, started + connect));
                    break;
                }
                Err(e) => {
                    last = broken(&format!("connecting to {peer}"), &e, TimeoutKind::Connect);
                }
            }
        }
        let (stream, deadline) = stream.ok_or(last)?;
        let setup =
            |e: std::io::Error| broken(&format!("connection to {peer}"), &e, TimeoutKind::Connect);
        stream.set_nodelay(true).map_err(setup)?;
        stream.set_read_timeout(Some(connect)).map_err(setup)?;
        stream.set_write_timeout(Some(connect)).map_err(setup)?;
        let mut conn = Connection {
            io: BufReader::with_capacity(64 << 10, Transport::Plain(stream)),
            peer,
            network: settings.network,
            setup_deadline: Some(deadline),
            meter: None,
            next_stream: 0,
            handle: None,
            authenticated: false,
        };
        let open_answer = conn.set_up(host, settings, early_open)?;
        conn.setup_deadline = None;
        if let Some(tcp) = conn.io.get_ref().tcp() {
            let idle = Some(settings.network.idle_timeout.max(Duration::from_millis(1)));
            let _ = tcp.set_read_timeout(idle);
            tcp.set_write_timeout(idle).map_err(|e| {
                broken(
                    &format!("connection to {}", conn.peer),
                    &e,
                    TimeoutKind::Idle,
                )
            })?;
        }
        Ok((conn, open_answer))
    }

    /// A connection to a recorded server: `reply` is everything the server sends, what
    /// the client sends is dropped (the response handling, without sockets, for fuzzing).
    /// Its timeouts are zero: a `kXR_wait` of more than 0 s breaks it at once.
    #[cfg(any(all(test, feature = "http"), feature = "fuzzing"))]
    pub(crate) fn replaying(reply: Vec<u8>) -> Connection {
        Connection {
            io: BufReader::new(Transport::Replay(std::io::Cursor::new(reply))),
            peer: "recorded server".to_string(),
            network: NetworkOptions {
                connect_timeout: Duration::ZERO,
                first_byte_timeout: Duration::ZERO,
                idle_timeout: Duration::ZERO,
                speed_limit: 0,
                speed_time: Duration::ZERO,
                retries: 0,
            },
            setup_deadline: None,
            meter: None,
            next_stream: 0,
            handle: None,
            authenticated: false,
        }
    }

    /// The session set-up on a connected transport: handshake, `kXR_protocol`, login and
    /// authentication (see [`Connection::connect`]); the early open's answer, if any.
    pub(crate) fn set_up(
        &mut self,
        host: &str,
        settings: &Settings,
        early_open: Option<&str>,
    ) -> Result<Option<Answer>, Fault> {
        let (login_answer, open_answer) = self.handshake(host, settings, early_open)?;
        self.login(settings, login_answer)?;
        Ok(open_answer)
    }

    /// The handshake and `kXR_protocol`, and, without TLS, `kXR_login` in the same
    /// write: its answer is returned (a round trip saved; with TLS the login must wait
    /// for the switch).
    fn handshake(
        &mut self,
        host: &str,
        settings: &Settings,
        early_open: Option<&str>,
    ) -> Result<(Option<Vec<u8>>, Option<Answer>), Fault> {
        let mut flags = 0;
        if settings.tls {
            flags |= protocol_flags::ABLE_TLS | protocol_flags::WANT_TLS;
        }
        let stream = self.take_stream_id();
        let mut hello = initial_handshake().to_vec();
        hello.extend_from_slice(&Request::Protocol { flags }.encode(stream));
        let early_login = (!settings.tls).then(|| {
            let request = login_request(settings);
            let login_stream = self.take_stream_id();
            hello.extend_from_slice(&request.encode(login_stream));
            (request, login_stream)
        });
        let early_open = early_open.filter(|_| early_login.is_some()).map(|path| {
            let request = Request::Open {
                path: path.to_string(),
            };
            let open_stream = self.take_stream_id();
            hello.extend_from_slice(&request.encode(open_stream));
            (request, open_stream)
        });
        let peer = self.peer.clone();
        let kind = self.stall_kind();
        self.io
            .get_mut()
            .write_all(&hello)
            .map_err(|e| broken(&format!("handshake with {peer}"), &e, kind))?;
        let mut reply = [0u8; RESPONSE_HEADER_LEN + 8];
        self.arm(false)?;
        self.io
            .read_exact(&mut reply)
            .map_err(|e| broken(&format!("handshake with {peer}"), &e, kind))?;
        let mut head = [0u8; RESPONSE_HEADER_LEN];
        head.copy_from_slice(&reply[..RESPONSE_HEADER_LEN]);
        let head = ResponseHeader::decode(&head);
        if head.stream_id != [0, 0] || head.status != status::OK || head.body_len != 8 {
            return Err(Fault::Violation(format!(
                "{peer} did not answer the XRootD handshake (is it an XRootD server?)"
            )));
        }
        // The kXR_protocol (and kXR_login) responses, read through the multiplexer.
        let mut calls = vec![Call::new(
            Request::Protocol { flags },
            Sink::Body(Vec::new()),
        )];
        let mut routes = HashMap::from([(stream, 0usize)]);
        for (request, stream) in early_login.into_iter().chain(early_open) {
            routes.insert(stream, calls.len());
            calls.push(Call::new(request, Sink::Body(Vec::new())));
        }
        for call in &mut calls {
            call.state = CallState::InFlight;
            call.sent_at = Instant::now();
        }
        // The open may fail (a redirect, a missing file) while the session is fine.
        let mut open_fault = None;
        while calls
            .iter()
            .any(|c| matches!(c.state, CallState::InFlight | CallState::AwaitAsync(_)))
        {
            // Once the session is answered, the early open is a request like any other:
            // its answer is awaited within the first-byte timeout.
            let open_only = calls.len() == 3
                && calls[..2]
                    .iter()
                    .all(|c| !matches!(c.state, CallState::InFlight | CallState::AwaitAsync(_)));
            let setup_deadline = if open_only {
                self.setup_deadline.take()
            } else {
                None
            };
            let received = self.receive(&mut calls, &mut routes, None);
            if setup_deadline.is_some() {
                self.setup_deadline = setup_deadline;
            }
            match received? {
                Some((2, fault)) => {
                    calls[2].state = CallState::Failed;
                    open_fault = Some(fault);
                }
                Some((_, fault)) => return Err(fault),
                None => {}
            }
        }
        // A call told to wait (kXR_wait) has no answer yet: it is sent again the usual
        // way (the login by `login`, the open by the caller).
        let open_answer = match (calls.get_mut(2), open_fault) {
            (Some(_), Some(fault)) => Some(Err(fault)),
            (Some(call), None) if call.is_done() => Some(Ok(call.take_body())),
            _ => None,
        };
        let login_answer = calls
            .get_mut(1)
            .filter(|c| c.is_done())
            .map(Call::take_body);
        let info = ProtocolInfo::decode(&calls[0].take_body())
            .map_err(|e| Fault::Violation(format!("{peer}: {e}")))?;
        if settings.tls && info.flags & server_flags::HAVE_TLS == 0 {
            return Err(Fault::Unsupported(format!(
                "{peer} does not offer TLS (roots:// needs a server configured with xrd.tls)"
            )));
        }
        if info.flags & server_flags::GOTO_TLS != 0 {
            if !settings.tls {
                return Err(Fault::Violation(format!(
                    "{peer} switched to TLS, which was not asked for"
                )));
            }
            let Transport::Plain(tcp) = std::mem::replace(self.io.get_mut(), Transport::Switching)
            else {
                return Err(Fault::Violation(format!("{peer} asked for TLS twice")));
            };
            if !self.io.buffer().is_empty() {
                return Err(Fault::Violation(format!(
                    "{peer} sent data before the TLS handshake"
                )));
            }
            self.arm(false)?;
            let secured =
                tls::connect(host, tcp, settings.tls_config.clone()).map_err(|e| match e {
                    tls::TlsError::Io(e) => broken(
                        &format!("TLS handshake with {peer}"),
                        &e,
                        TimeoutKind::Connect,
                    ),
                    tls::TlsError::Rejected(msg) => {
                        Fault::Tls(format!("TLS handshake with {peer} failed: {msg}"))
                    }
                    tls::TlsError::Setup(msg) => {
                        Fault::Unsupported(format!("TLS with {peer}: {msg}"))
                    }
                })?;
            *self.io.get_mut() = Transport::Tls(Box::new(secured));
        } else if settings.tls {
            return Err(Fault::Unsupported(format!(
                "{peer} did not switch to TLS although roots:// asked for it"
            )));
        }
        Ok((login_answer, open_answer))
    }

    /// Logs in (unless `answer` already holds the login's response) and authenticates
    /// when the server asks for it.
    fn login(&mut self, settings: &Settings, answer: Option<Vec<u8>>) -> Result<(), Fault> {
        let body = match answer {
            Some(body) => body,
            None => self.control(login_request(settings))?,
        };
        let wanted =
            decode_login(&body).map_err(|e| Fault::Violation(format!("{}: {e}", self.peer)))?;
        if wanted.is_empty() {
            return Ok(());
        }
        self.authenticated = true;
        let mut failures = Vec::new();
        // Whether the server refused credentials (rather than none being offered).
        let mut refused = false;
        for protocol in &wanted {
            let Some(credentials) = auth::credentials(
                &protocol.name,
                self.is_encrypted(),
                settings.token.as_deref(),
                &mut failures,
            ) else {
                continue;
            };
            match self.control(Request::Auth {
                protocol: protocol.name.clone(),
                credentials,
            }) {
                Ok(_) => return Ok(()),
                Err(Fault::Server(e)) => {
                    refused = true;
                    failures.push(format!("{}: {}", protocol.name, e));
                }
                Err(other) => return Err(other),
            }
        }
        let offered: Vec<&str> = wanted.iter().map(|p| p.name.as_str()).collect();
        let message = format!(
            "authentication to {} failed: the server accepts {} ; {}",
            self.peer,
            offered.join(", "),
            if failures.is_empty() {
                "this client supports unix and ztn".to_string()
            } else {
                failures.join("; ")
            }
        );
        Err(if refused {
            Fault::Denied(message)
        } else {
            Fault::Unsupported(message)
        })
    }
}
