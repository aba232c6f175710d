//! The XRootD wire format: request encoding and response decoding, as pure functions of
//! bytes (no sockets). Layouts follow `XProtocol.hh` of the XRootD sources: every number
//! is big-endian; a request is a 24-byte header (stream id, request code, 16 bytes of
//! parameters, payload length) and its payload; a response is an 8-byte header (stream
//! id, status, body length) and its body.

use std::fmt;

/// The protocol version this client speaks (5.2.0).
pub(crate) const PROTOCOL_VERSION: u32 = 0x0000_0520;
/// The port XRootD servers listen on unless the URL says otherwise.
pub(crate) const DEFAULT_PORT: u16 = 1094;

/// Bytes in a request header.
pub(crate) const REQUEST_HEADER_LEN: usize = 24;
/// Bytes in a response header.
pub(crate) const RESPONSE_HEADER_LEN: usize = 8;
/// Bytes of one element of a vector-read list (file handle, length, offset), in the
/// request and before every segment of the response.
pub(crate) const READV_ELEMENT_LEN: usize = 16;

/// Request codes (`XRequestTypes`).
pub(crate) mod request {
    /// Authentication credentials.
    pub(crate) const AUTH: u16 = 3000;
    /// Server queries (configuration values, checksums, ...).
    pub(crate) const QUERY: u16 = 3001;
    /// Closes a file handle.
    pub(crate) const CLOSE: u16 = 3003;
    /// Protocol version and capabilities.
    pub(crate) const PROTOCOL: u16 = 3006;
    /// Starts a session.
    pub(crate) const LOGIN: u16 = 3007;
    /// Opens a file.
    pub(crate) const OPEN: u16 = 3010;
    /// Reads one range.
    pub(crate) const READ: u16 = 3013;
    /// Size and flags of a path or open file.
    pub(crate) const STAT: u16 = 3017;
    /// Reads many ranges.
    pub(crate) const READV: u16 = 3025;
}

/// Response status codes (`XResponseType`).
pub(crate) mod status {
    /// The final (or only) part of a successful response.
    pub(crate) const OK: u16 = 0;
    /// A part of a successful response; more parts follow.
    pub(crate) const OK_SO_FAR: u16 = 4000;
    /// An unsolicited message; `kXR_asynresp` carries a deferred response.
    pub(crate) const ATTN: u16 = 4001;
    /// The authentication needs another exchange.
    pub(crate) const AUTH_MORE: u16 = 4002;
    /// The request failed.
    pub(crate) const ERROR: u16 = 4003;
    /// Ask another server.
    pub(crate) const REDIRECT: u16 = 4004;
    /// Send the request again after some seconds.
    pub(crate) const WAIT: u16 = 4005;
    /// The response will come later as a `kXR_attn`/`kXR_asynresp` message.
    pub(crate) const WAIT_RESP: u16 = 4006;
}

/// The `kXR_attn` action carrying a deferred response.
pub(crate) const ATTN_ASYNC_RESPONSE: u32 = 5008;

/// Error codes of `kXR_error` responses (`XErrorCode`) this client treats specially.
pub(crate) mod error_code {
    /// I/O error on the server.
    pub(crate) const IO_ERROR: u32 = 3007;
    /// Access refused (permissions, authorization).
    pub(crate) const NOT_AUTHORIZED: u32 = 3010;
    /// No such file.
    pub(crate) const NOT_FOUND: u32 = 3011;
    /// Internal server error.
    pub(crate) const SERVER_ERROR: u32 = 3012;
    /// No server is available to serve the file.
    pub(crate) const NO_SERVER: u32 = 3014;
    /// The path is a directory.
    pub(crate) const IS_DIRECTORY: u32 = 3016;
    /// The operation is in progress.
    pub(crate) const IN_PROGRESS: u32 = 3020;
    /// The server is overloaded.
    pub(crate) const OVERLOADED: u32 = 3024;
    /// The request timed out on the server.
    pub(crate) const REQUEST_TIMED_OUT: u32 = 3034;
    /// A server-side timer expired.
    pub(crate) const TIMER_EXPIRED: u32 = 3035;
    /// Authentication failed.
    pub(crate) const AUTH_FAILED: u32 = 3030;
}

/// Flags of the `kXR_protocol` request.
pub(crate) mod protocol_flags {
    /// The client can switch to TLS.
    pub(crate) const ABLE_TLS: u8 = 0x02;
    /// The client wants the connection to switch to TLS.
    pub(crate) const WANT_TLS: u8 = 0x04;
    /// `expect` value: a login follows.
    pub(crate) const EXPECT_LOGIN: u8 = 0x03;
}

/// Flags of the `kXR_protocol` response.
pub(crate) mod server_flags {
    /// The server is configured for TLS.
    pub(crate) const HAVE_TLS: u32 = 0x8000_0000;
    /// The client must start TLS right after this response.
    pub(crate) const GOTO_TLS: u32 = 0x4000_0000;
}

/// `kXR_open` option: read only.
const OPEN_READ: u16 = 0x0010;
/// `kXR_open` option: return the file's stat information with the handle.
const OPEN_RETSTAT: u16 = 0x0400;
/// Bytes of a `kXR_open` response before the stat information: the file handle, the
/// compression page size and type.
const OPEN_RESPONSE_FIXED_LEN: usize = 12;
/// `kXR_query` type: configuration values.
const QUERY_CONFIG: u16 = 7;
/// `kXR_login` capability: asynchronous responses understood, protocol level 5.
const LOGIN_CAPVER: u8 = 0x80 | 5;

/// A 4-byte file handle the server returns from `kXR_open`.
pub(crate) type FileHandle = [u8; 4];

/// One request, before it is given a stream id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    /// `kXR_protocol`, with `kXR_ableTLS`/`kXR_wantTLS` flags.
    Protocol {
        /// The request flags ([`protocol_flags`]).
        flags: u8,
    },
    /// `kXR_login`.
    Login {
        /// The client's process id.
        pid: u32,
        /// The user name (at most 8 bytes are sent).
        user: String,
    },
    /// `kXR_auth` with one protocol's credentials.
    Auth {
        /// The protocol name ("unix", "ztn"), at most 4 bytes.
        protocol: String,
        /// The credentials, as the protocol lays them out.
        credentials: Vec<u8>,
    },
    /// `kXR_open`, read only, of `path` (with its `?opaque` part, if any), asking for
    /// the stat information in the response.
    Open {
        /// The path sent to the server.
        path: String,
    },
    /// `kXR_stat` of an open file.
    Stat {
        /// The file.
        handle: FileHandle,
    },
    /// `kXR_query` of configuration values (`kXR_Qconfig`), names separated by spaces.
    QueryConfig {
        /// The names asked for.
        names: String,
    },
    /// `kXR_read` of one range.
    Read {
        /// The file.
        handle: FileHandle,
        /// The first byte.
        offset: u64,
        /// The number of bytes.
        len: u32,
    },
    /// `kXR_readv` of many ranges of one file.
    ReadV {
        /// The file.
        handle: FileHandle,
        /// (offset, length) of every segment.
        segments: Vec<(u64, u32)>,
    },
    /// `kXR_close`.
    Close {
        /// The file.
        handle: FileHandle,
    },
}

impl Request {
    /// The request code.
    pub(crate) fn code(&self) -> u16 {
        match self {
            Request::Protocol { .. } => request::PROTOCOL,
            Request::Login { .. } => request::LOGIN,
            Request::Auth { .. } => request::AUTH,
            Request::Open { .. } => request::OPEN,
            Request::Stat { .. } => request::STAT,
            Request::QueryConfig { .. } => request::QUERY,
            Request::Read { .. } => request::READ,
            Request::ReadV { .. } => request::READV,
            Request::Close { .. } => request::CLOSE,
        }
    }

    /// The bytes on the wire: header (with `stream_id`) and payload.
    pub(crate) fn encode(&self, stream_id: [u8; 2]) -> Vec<u8> {
        let mut params = [0u8; 16];
        let mut payload: Vec<u8> = Vec::new();
        match self {
            Request::Protocol { flags } => {
                params[0..4].copy_from_slice(&PROTOCOL_VERSION.to_be_bytes());
                params[4] = *flags;
                params[5] = protocol_flags::EXPECT_LOGIN;
            }
            Request::Login { pid, user } => {
                params[0..4].copy_from_slice(&pid.to_be_bytes());
                let name = user.as_bytes();
                let n = name.len().min(8);
                params[4..4 + n].copy_from_slice(&name[..n]);
                // ability2, ability: none of the optional abilities are claimed.
                params[14] = LOGIN_CAPVER;
            }
            Request::Auth {
                protocol,
                credentials,
            } => {
                let name = protocol.as_bytes();
                let n = name.len().min(4);
                params[12..12 + n].copy_from_slice(&name[..n]);
                payload.extend_from_slice(credentials);
            }
            Request::Open { path } => {
                // mode 0 (not creating), options: read only, return the stat.
                params[2..4].copy_from_slice(&(OPEN_READ | OPEN_RETSTAT).to_be_bytes());
                payload.extend_from_slice(path.as_bytes());
            }
            Request::Stat { handle } => {
                params[12..16].copy_from_slice(handle);
            }
            Request::QueryConfig { names } => {
                params[0..2].copy_from_slice(&QUERY_CONFIG.to_be_bytes());
                payload.extend_from_slice(names.as_bytes());
            }
            Request::Read {
                handle,
                offset,
                len,
            } => {
                params[0..4].copy_from_slice(handle);
                params[4..12].copy_from_slice(&offset.to_be_bytes());
                params[12..16].copy_from_slice(&len.to_be_bytes());
            }
            Request::ReadV { handle, segments } => {
                payload.reserve(segments.len() * READV_ELEMENT_LEN);
                for &(offset, len) in segments {
                    payload.extend_from_slice(handle);
                    payload.extend_from_slice(&len.to_be_bytes());
                    payload.extend_from_slice(&offset.to_be_bytes());
                }
            }
            Request::Close { handle } => {
                params[0..4].copy_from_slice(handle);
            }
        }
        let mut out = Vec::with_capacity(REQUEST_HEADER_LEN + payload.len());
        out.extend_from_slice(&stream_id);
        out.extend_from_slice(&self.code().to_be_bytes());
        out.extend_from_slice(&params);
        // Payloads are at most a few kB (a path, 1024 vector elements): always fit.
        #[allow(clippy::cast_possible_truncation)]
        let payload_len = payload.len() as u32;
        out.extend_from_slice(&payload_len.to_be_bytes());
        out.extend_from_slice(&payload);
        out
    }
}

/// The first bytes a client sends: the initial handshake (`0, 0, 0, 4, 2012`).
pub(crate) fn initial_handshake() -> [u8; 20] {
    let mut out = [0u8; 20];
    out[12..16].copy_from_slice(&4u32.to_be_bytes());
    out[16..20].copy_from_slice(&2012u32.to_be_bytes());
    out
}

/// A decoded response header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResponseHeader {
    /// The stream id of the request this answers (0, 0 for unsolicited messages).
    pub stream_id: [u8; 2],
    /// The status ([`status`]).
    pub status: u16,
    /// The length of the body that follows.
    pub body_len: u32,
}

impl ResponseHeader {
    /// Decodes the 8 header bytes.
    pub(crate) fn decode(bytes: &[u8; RESPONSE_HEADER_LEN]) -> Self {
        ResponseHeader {
            stream_id: [bytes[0], bytes[1]],
            status: u16::from_be_bytes([bytes[2], bytes[3]]),
            body_len: u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
        }
    }

    /// Encodes the header (for tests and fake servers).
    #[cfg(test)]
    pub(crate) fn encode(&self) -> [u8; RESPONSE_HEADER_LEN] {
        let mut out = [0u8; RESPONSE_HEADER_LEN];
        out[0..2].copy_from_slice(&self.stream_id);
        out[2..4].copy_from_slice(&self.status.to_be_bytes());
        out[4..8].copy_from_slice(&self.body_len.to_be_bytes());
        out
    }
}

/// A malformed response body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Malformed(pub String);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn be_u32(body: &[u8], at: usize, what: &str) -> Result<u32, Malformed> {
    body.get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
        .ok_or_else(|| {
            Malformed(format!(
                "{what} response of {} bytes is too short",
                body.len()
            ))
        })
}

/// Text of a body: up to the first NUL, invalid UTF-8 replaced.
fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end])
        .trim_end()
        .to_string()
}

/// A `kXR_error` response: the error code and the server's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerError {
    /// The `XErrorCode`.
    pub code: u32,
    /// The server's message.
    pub message: String,
}

impl ServerError {
    /// Decodes a `kXR_error` body.
    pub(crate) fn decode(body: &[u8]) -> Result<Self, Malformed> {
        Ok(ServerError {
            code: be_u32(body, 0, "kXR_error")?,
            message: text(&body[4..]),
        })
    }

    /// The code's name, as XRootD spells it.
    pub(crate) fn code_name(&self) -> &'static str {
        const NAMES: [&str; 36] = [
            "kXR_ArgInvalid",
            "kXR_ArgMissing",
            "kXR_ArgTooLong",
            "kXR_FileLocked",
            "kXR_FileNotOpen",
            "kXR_FSError",
            "kXR_InvalidRequest",
            "kXR_IOError",
            "kXR_NoMemory",
            "kXR_NoSpace",
            "kXR_NotAuthorized",
            "kXR_NotFound",
            "kXR_ServerError",
            "kXR_Unsupported",
            "kXR_noserver",
            "kXR_NotFile",
            "kXR_isDirectory",
            "kXR_Cancelled",
            "kXR_ItExists",
            "kXR_ChkSumErr",
            "kXR_inProgress",
            "kXR_overQuota",
            "kXR_SigVerErr",
            "kXR_DecryptErr",
            "kXR_Overloaded",
            "kXR_fsReadOnly",
            "kXR_BadPayload",
            "kXR_AttrNotFound",
            "kXR_TLSRequired",
            "kXR_noReplicas",
            "kXR_AuthFailed",
            "kXR_Impossible",
            "kXR_Conflict",
            "kXR_TooManyErrs",
            "kXR_ReqTimedOut",
            "kXR_TimerExpired",
        ];
        self.code
            .checked_sub(3000)
            .and_then(|i| NAMES.get(i as usize))
            .copied()
            .unwrap_or("unknown error code")
    }

    /// Whether the fault may pass (server busy, timed out, no server available yet).
    pub(crate) fn is_transient(&self) -> bool {
        use error_code::*;
        matches!(
            self.code,
            IO_ERROR
                | SERVER_ERROR
                | NO_SERVER
                | IN_PROGRESS
                | OVERLOADED
                | REQUEST_TIMED_OUT
                | TIMER_EXPIRED
        )
    }
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.code_name(), self.code, self.message)
    }
}

/// Where a `kXR_redirect` sends the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    /// The new host.
    pub host: String,
    /// The new port.
    pub port: u16,
    /// Opaque information to append to the path (`?...`), if any.
    pub opaque: Option<String>,
}

impl Redirect {
    /// Decodes a `kXR_redirect` body: a port, then `host[?opaque[?token]]` or, when the
    /// port is not positive, a URL `root://host:port/...[?opaque]`.
    pub(crate) fn decode(body: &[u8]) -> Result<Self, Malformed> {
        let port = be_u32(body, 0, "kXR_redirect")? as i32;
        let target = text(&body[4..]);
        let (location, opaque) = match target.split_once('?') {
            Some((l, o)) => (l.to_string(), Some(o.replace('?', "&"))),
            None => (target.clone(), None),
        };
        let opaque = opaque.filter(|o| !o.is_empty());
        let bad = || {
            Malformed(format!(
                "kXR_redirect to \"{target}\" (port {port}) is invalid"
            ))
        };
        if port > 0 {
            let port = u16::try_from(port).map_err(|_| bad())?;
            if location.is_empty() || location.contains('/') {
                return Err(bad());
            }
            return Ok(Redirect {
                host: location,
                port,
                opaque,
            });
        }
        // A non-positive port: the location is a URL (the negative value carries flags).
        let url = XrdUrl::parse(&location).ok_or_else(bad)?;
        Ok(Redirect {
            host: url.host,
            port: url.port,
            opaque: opaque.or(url.opaque),
        })
    }
}

/// A `kXR_wait` or `kXR_waitresp` body: the seconds to wait.
pub(crate) fn decode_wait_seconds(body: &[u8]) -> Result<u32, Malformed> {
    be_u32(body, 0, "kXR_wait")
}

/// A decoded `kXR_protocol` response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProtocolInfo {
    /// The server's protocol version.
    pub version: u32,
    /// The server's flags ([`server_flags`]).
    pub flags: u32,
}

impl ProtocolInfo {
    /// Decodes a `kXR_protocol` response body (the optional security and bind parts
    /// after the first 8 bytes are not needed here).
    pub(crate) fn decode(body: &[u8]) -> Result<Self, Malformed> {
        Ok(ProtocolInfo {
            version: be_u32(body, 0, "kXR_protocol")?,
            flags: be_u32(body, 4, "kXR_protocol")?,
        })
    }
}

/// A security protocol the server accepts, from the `kXR_login` response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SecurityProtocol {
    /// Its name ("unix", "ztn", "gsi", ...).
    pub name: String,
    /// Its parameters (after the comma), if any.
    pub params: String,
}

/// Decodes a `kXR_login` response body: the 16-byte session id, then the security
/// protocols the server wants (`&P=name[,params]...`); none means no authentication.
pub(crate) fn decode_login(body: &[u8]) -> Result<Vec<SecurityProtocol>, Malformed> {
    if body.len() < 16 {
        return Err(Malformed(format!(
            "kXR_login response of {} bytes is too short",
            body.len()
        )));
    }
    let sec = text(&body[16..]);
    Ok(sec
        .split('&')
        .filter_map(|part| part.strip_prefix("P="))
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (name, params) = p.split_once(',').unwrap_or((p, ""));
            SecurityProtocol {
                name: name.to_string(),
                params: params.to_string(),
            }
        })
        .collect())
}

/// The file handle of a `kXR_open` response and, if the server sent it (`kXR_retstat`),
/// the file's stat information.
pub(crate) fn decode_open(body: &[u8]) -> Result<(FileHandle, Option<StatInfo>), Malformed> {
    let handle = body
        .get(0..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| {
            Malformed(format!(
                "kXR_open response of {} bytes is too short",
                body.len()
            ))
        })?;
    let stat = match body.get(OPEN_RESPONSE_FIXED_LEN..) {
        Some(info) if !info.is_empty() && info[0] != 0 => Some(StatInfo::decode(info)?),
        _ => None,
    };
    Ok((handle, stat))
}

/// A decoded `kXR_stat` response: `"id size flags mtime"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StatInfo {
    /// The file's id on the server (an inode number, for a file system), if a number.
    pub id: Option<u64>,
    /// Size in bytes.
    pub size: u64,
    /// `XStatRespFlags`.
    pub flags: u32,
    /// Modification time (seconds since 1970).
    pub mtime: u64,
}

impl StatInfo {
    /// Decodes a `kXR_stat` body.
    pub(crate) fn decode(body: &[u8]) -> Result<Self, Malformed> {
        let t = text(body);
        let fields: Vec<&str> = t.split_ascii_whitespace().collect();
        let bad = || Malformed(format!("kXR_stat response \"{t}\" is invalid"));
        if fields.len() < 4 {
            return Err(bad());
        }
        Ok(StatInfo {
            id: fields[0].parse().ok(),
            size: fields[1].parse().map_err(|_| bad())?,
            flags: fields[2].parse().map_err(|_| bad())?,
            mtime: fields[3].parse().map_err(|_| bad())?,
        })
    }

    /// Whether the path is a directory.
    pub(crate) fn is_directory(&self) -> bool {
        self.flags & 2 != 0
    }

    /// Whether the path is a directory or not a regular file.
    pub(crate) fn is_directory_or_special(&self) -> bool {
        self.flags & (2 | 4) != 0
    }
}

/// The values of a `kXR_query` config response, one per line in the order asked;
/// a server that does not know a name answers the name itself, read here as `None`.
pub(crate) fn decode_query_config(body: &[u8]) -> Vec<Option<u64>> {
    text(body)
        .lines()
        .map(|l| l.trim().parse::<u64>().ok())
        .collect()
}

/// The header before each segment of a `kXR_readv` response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadvSegmentHeader {
    /// The segment's length.
    pub len: u32,
    /// The segment's offset in the file.
    pub offset: u64,
}

impl ReadvSegmentHeader {
    /// Decodes the 16 bytes (file handle, length, offset).
    pub(crate) fn decode(bytes: &[u8; READV_ELEMENT_LEN]) -> Self {
        ReadvSegmentHeader {
            len: u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
            offset: u64::from_be_bytes([
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14],
                bytes[15],
            ]),
        }
    }
}

/// The parts of a `root://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct XrdUrl {
    /// Whether TLS is asked for (`roots://`, `xroots://`).
    pub tls: bool,
    /// The user name, if given (`root://user@host/...`).
    pub user: Option<String>,
    /// The host name or address (IPv6 without brackets).
    pub host: String,
    /// The port.
    pub port: u16,
    /// The path on the server, starting with `/`.
    pub path: String,
    /// The query (without `?`), passed to the server with the path.
    pub opaque: Option<String>,
}

impl XrdUrl {
    /// Parses `root[s]://[user[:password]@]host[:port]/path[?query]` (also `xroot[s]`).
    pub(crate) fn parse(url: &str) -> Option<XrdUrl> {
        let (scheme, rest) = url.split_once("://")?;
        let tls = match scheme.to_ascii_lowercase().as_str() {
            "root" | "xroot" => false,
            "roots" | "xroots" => true,
            _ => return None,
        };
        let (rest, opaque) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q.to_string()).filter(|q| !q.is_empty())),
            None => (rest, None),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        let (user, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => {
                let name = u.split(':').next().unwrap_or("");
                (Some(name.to_string()).filter(|n| !n.is_empty()), h)
            }
            None => (None, authority),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6.split_once(']')?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().ok()?,
                None if after.is_empty() => DEFAULT_PORT,
                None => return None,
            };
            (h.to_string(), port)
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p.parse().ok()?),
                None => (hostport.to_string(), DEFAULT_PORT),
            }
        };
        if host.is_empty() || port == 0 {
            return None;
        }
        // "root://host//abs/path" and "root://host/path" both name "/…" on the server.
        let path = format!("/{}", path.trim_start_matches('/'));
        Some(XrdUrl {
            tls,
            user,
            host,
            port,
            path,
            opaque,
        })
    }

    /// The path with the query the server should see (`xrdcl.*` settings are the
    /// client's own and stay here).
    pub(crate) fn path_with_opaque(&self) -> String {
        let opaque: Vec<&str> = self
            .opaque
            .as_deref()
            .unwrap_or("")
            .split('&')
            .filter(|kv| !kv.is_empty() && !kv.starts_with("xrdcl."))
            .collect();
        if opaque.is_empty() {
            self.path.clone()
        } else {
            format!("{}?{}", self.path, opaque.join("&"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    // Expected layouts are written out by hand from XProtocol.hh's structs.

    #[test]
    fn handshake_is_five_big_endian_words() {
        assert_eq!(
            hex(&initial_handshake()),
            "00000000000000000000000000000004000007dc"
        );
    }

    fn zeros(n: usize) -> String {
        "00".repeat(n)
    }

    #[test]
    fn protocol_request_layout() {
        let r = Request::Protocol {
            flags: protocol_flags::ABLE_TLS,
        }
        .encode([0, 1]);
        // sid, kXR_protocol 3006 = 0x0bbe, clientpv 0x520, flags, expect kXR_ExpLogin,
        // reserved[10], dlen.
        let expected = format!("00010bbe000005200203{}00000000", zeros(10));
        assert_eq!(hex(&r), expected);
    }

    #[test]
    fn login_request_layout() {
        let r = Request::Login {
            pid: 0x01020304,
            user: "averyverylongname".into(),
        }
        .encode([0, 2]);
        // sid, kXR_login 3007 = 0x0bbf, pid, username[8] (truncated), ability2,
        // ability, capver (kXR_asyncap | kXR_ver005 = 0x85), reserved, dlen.
        let expected = format!("00020bbf01020304{}0000850000000000", hex(b"averyver"));
        assert_eq!(hex(&r), expected);
        let short = Request::Login {
            pid: 7,
            user: "ab".into(),
        }
        .encode([0, 3]);
        assert_eq!(&short[8..16], b"ab\0\0\0\0\0\0");
    }

    #[test]
    fn open_request_layout() {
        let r = Request::Open {
            path: "/d/f.root?x=1".into(),
        }
        .encode([1, 0]);
        // sid, kXR_open 3010 = 0x0bc2, mode 0, options kXR_open_read | kXR_retstat =
        // 0x0410, optiont 0, reserved[6], fhtemplt[4], dlen 13, then the path.
        let expected = format!("01000bc2000004100000{}0000000d", zeros(10));
        assert_eq!(hex(&r[..24]), expected);
        assert_eq!(&r[24..], b"/d/f.root?x=1");
    }

    #[test]
    fn read_request_layout() {
        let r = Request::Read {
            handle: [9, 8, 7, 6],
            offset: 0x1_0000_0002,
            len: 300,
        }
        .encode([0, 5]);
        // sid, kXR_read 3013 = 0x0bc5, fhandle, offset, rlen 300 = 0x12c, dlen 0.
        let expected = concat!(
            "00050bc5",
            "09080706",
            "0000000100000002",
            "0000012c",
            "00000000"
        );
        assert_eq!(hex(&r), expected);
    }

    #[test]
    fn readv_request_layout() {
        let r = Request::ReadV {
            handle: [1, 2, 3, 4],
            segments: vec![(16, 8), (0x1_0000_0000, 1)],
        }
        .encode([0, 6]);
        // sid, kXR_readv 3025 = 0x0bd1, reserved[15], pathid 0, dlen 32, then per
        // element: fhandle, rlen, offset.
        let expected = format!(
            "00060bd1{}00000020{}{}",
            zeros(16),
            "01020304000000080000000000000010",
            "01020304000000010000000100000000"
        );
        assert_eq!(hex(&r), expected);
    }

    #[test]
    fn small_requests_layout() {
        let h = [0xa, 0xb, 0xc, 0xd];
        // kXR_stat 3017 = 0x0bc9: options, reserved[7], wants[4], fhandle[4], dlen.
        let stat = format!("00070bc9{}0a0b0c0d00000000", zeros(12));
        assert_eq!(hex(&Request::Stat { handle: h }.encode([0, 7])), stat);
        // kXR_close 3003 = 0x0bbb: fhandle, reserved[12], dlen.
        let close = format!("00080bbb0a0b0c0d{}00000000", zeros(12));
        assert_eq!(hex(&Request::Close { handle: h }.encode([0, 8])), close);
        // kXR_query 3001 = 0x0bb9: infotype kXR_Qconfig 7, reserved[2], fhandle[4],
        // reserved[8], dlen 27, then the names.
        let q = Request::QueryConfig {
            names: "readv_iov_max readv_ior_max".into(),
        }
        .encode([0, 9]);
        let query = format!("00090bb90007{}0000001b", zeros(14));
        assert_eq!(hex(&q[..24]), query);
        assert_eq!(&q[24..], b"readv_iov_max readv_ior_max");
        // kXR_auth 3000 = 0x0bb8: reserved[12], credtype[4], dlen, credentials.
        let a = Request::Auth {
            protocol: "unix".into(),
            credentials: b"unix\0me\0".to_vec(),
        }
        .encode([0, 10]);
        let auth = format!("000a0bb8{}{}00000008", zeros(12), hex(b"unix"));
        assert_eq!(hex(&a[..24]), auth);
        assert_eq!(&a[24..], b"unix\0me\0");
    }

    #[test]
    fn response_bodies_decode() {
        let h = ResponseHeader::decode(&[0, 3, 0x0f, 0xa3, 0, 0, 1, 0]);
        assert_eq!(
            h,
            ResponseHeader {
                stream_id: [0, 3],
                status: status::ERROR,
                body_len: 256
            }
        );
        assert_eq!(ResponseHeader::decode(&h.encode()), h);

        let mut err = 3011u32.to_be_bytes().to_vec();
        err.extend_from_slice(b"no such file\0");
        let e = ServerError::decode(&err).unwrap();
        assert_eq!(e.code, error_code::NOT_FOUND);
        assert_eq!(e.message, "no such file");
        assert_eq!(e.code_name(), "kXR_NotFound");
        assert!(!e.is_transient());
        assert!(ServerError::decode(&[0, 0]).is_err());

        let mut rd = 1095u32.to_be_bytes().to_vec();
        rd.extend_from_slice(b"data.example.org?tried=a?tok");
        assert_eq!(
            Redirect::decode(&rd).unwrap(),
            Redirect {
                host: "data.example.org".into(),
                port: 1095,
                opaque: Some("tried=a&tok".into())
            }
        );
        let mut rd_url = (-1i32).to_be_bytes().to_vec();
        rd_url.extend_from_slice(b"root://[::1]:2000//x?a=b");
        assert_eq!(
            Redirect::decode(&rd_url).unwrap(),
            Redirect {
                host: "::1".into(),
                port: 2000,
                opaque: Some("a=b".into())
            }
        );
        let mut rd_bad = 70000u32.to_be_bytes().to_vec();
        rd_bad.extend_from_slice(b"h");
        assert!(Redirect::decode(&rd_bad).is_err());

        assert_eq!(decode_wait_seconds(&[0, 0, 0, 5, b'x']).unwrap(), 5);

        let p = ProtocolInfo::decode(&[0, 0, 5, 0x20, 0x80, 0, 0, 1]).unwrap();
        assert_eq!(p.version, 0x520);
        assert_eq!(p.flags, server_flags::HAVE_TLS | 1);

        let mut login = vec![7u8; 16];
        assert!(decode_login(&login).unwrap().is_empty());
        login.extend_from_slice(b"&P=unix&P=ztn,0:4096:\0");
        assert_eq!(
            decode_login(&login).unwrap(),
            vec![
                SecurityProtocol {
                    name: "unix".into(),
                    params: String::new()
                },
                SecurityProtocol {
                    name: "ztn".into(),
                    params: "0:4096:".into()
                }
            ]
        );
        assert!(decode_login(&[0; 15]).is_err());

        assert_eq!(decode_open(&[1, 2, 3, 4]).unwrap(), ([1, 2, 3, 4], None));
        let mut open = vec![1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(decode_open(&open).unwrap(), ([1, 2, 3, 4], None));
        open.extend_from_slice(b"9 1234 16 1700000000\0");
        let (_, stat) = decode_open(&open).unwrap();
        assert_eq!(stat.map(|s| s.size), Some(1234));
        let st = StatInfo::decode(b"1234 56789 16 1700000000\0").unwrap();
        assert_eq!(st.size, 56789);
        assert_eq!(st.mtime, 1_700_000_000);
        assert!(!st.is_directory_or_special());
        assert!(StatInfo::decode(b"1 x 0 0").is_err());

        assert_eq!(
            decode_query_config(b"1024\n2097136\n"),
            vec![Some(1024), Some(2_097_136)]
        );
        assert_eq!(
            decode_query_config(b"readv_iov_max\n"),
            vec![None],
            "an unknown name is echoed back"
        );

        let mut seg = [0u8; 16];
        seg[4..8].copy_from_slice(&77u32.to_be_bytes());
        seg[8..16].copy_from_slice(&(1u64 << 40).to_be_bytes());
        assert_eq!(
            ReadvSegmentHeader::decode(&seg),
            ReadvSegmentHeader {
                len: 77,
                offset: 1 << 40
            }
        );
    }

    #[test]
    fn urls_parse() {
        let u = XrdUrl::parse("root://eos.cern.ch//eos/opendata/f.root").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.path.as_str()),
            (false, "eos.cern.ch", 1094, "/eos/opendata/f.root")
        );
        let u = XrdUrl::parse("xroots://alice:pw@h:2094/rel/f?authz=x&xrdcl.a=1").unwrap();
        assert!(u.tls);
        assert_eq!(u.user.as_deref(), Some("alice"));
        assert_eq!(u.port, 2094);
        assert_eq!(u.path, "/rel/f");
        assert_eq!(u.path_with_opaque(), "/rel/f?authz=x");
        let u = XrdUrl::parse("root://[::1]:1095//f").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 1095));
        assert!(XrdUrl::parse("http://h/f").is_none());
        assert!(XrdUrl::parse("root://h:notaport//f").is_none());
        assert!(XrdUrl::parse("root://:1094//f").is_none());
    }
}
