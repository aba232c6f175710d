//! Fuzz harnesses of the byte sources: one function per fuzz target of the cargo-fuzz
//! crate in `fuzz/` that drives this crate's parsers (the HTTP multipart reader, the
//! XRootD response handling), each taking arbitrary bytes and never panicking.
//!
//! They live in the crate so that they reach its private parsers; the core's
//! `rntuple::fuzz` lists every target, replays the committed corpus in its tests and
//! builds the seed corpus, with [`seeds`] for these two. Compiled with the `fuzzing`
//! feature (and in the crate's tests); not part of the API.

// Fuzz harnesses (test support): a panic is a finding; inputs are small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use crate::http::multipart;
use crate::xrootd::connection::{Call, Connection, Segment, Settings, Sink};
use crate::xrootd::protocol::{
    decode_login, decode_open, decode_query_config, decode_wait_seconds, ProtocolInfo,
    ReadvSegmentHeader, Redirect, Request, ResponseHeader, ServerError, StatInfo, XrdUrl,
    READV_ELEMENT_LEN, RESPONSE_HEADER_LEN,
};
use crate::{ByteRange, IoMetrics, NetworkOptions};

/// One seed: its target, a file name, the bytes.
pub type Seed = (&'static str, String, Vec<u8>);

/// The seeds of the targets `http_multipart` and `xrootd_response`: replies and
/// answers made here.
pub fn seeds() -> Vec<Seed> {
    let mut out = Vec::new();
    multipart_seeds(&mut out);
    xrootd_seeds(&mut out);
    out
}

/// Target `http_multipart`: a `multipart/byteranges` reply to a multi-range request.
///
/// Byte 0: the number of ranges asked for (1 to 4); then per range a gap from the
/// previous range's end and a length minus one (u16 little endian each); a u32 the file
/// size (at least the end of the last range); a `Content-Type` line up to `\n`; the rest
/// is the body. A content type that is not multipart is parsed as a `Content-Range`.
pub fn http_multipart(data: &[u8]) {
    let Some((&n, mut rest)) = data.split_first() else {
        return;
    };
    let mut wanted = Vec::new();
    let mut end = 0u64;
    for _ in 0..(n % 4 + 1) {
        let Some(r) = rest.get(..4) else {
            return;
        };
        let gap = u64::from(u16::from_le_bytes([r[0], r[1]]));
        let len = u64::from(u16::from_le_bytes([r[2], r[3]])) + 1;
        wanted.push(ByteRange {
            offset: end + gap,
            len,
        });
        end += gap + len;
        rest = &rest[4..];
    }
    let Some(size) = rest.get(..4) else {
        return;
    };
    let size = u64::from(u32::from_le_bytes([size[0], size[1], size[2], size[3]])).max(end);
    rest = &rest[4..];
    let line_end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    let content_type = String::from_utf8_lossy(&rest[..line_end]);
    let mut body = rest.get(line_end + 1..).unwrap_or_default();
    let Some(boundary) = multipart::boundary_of(&content_type) else {
        let _ = multipart::parse_content_range(&content_type);
        return;
    };
    let limits = multipart::Limits::for_request(&wanted);
    let Ok(mut parts) = multipart::read_parts(
        &mut body,
        &boundary,
        &wanted,
        size,
        limits,
        &Vec::with_capacity,
    ) else {
        return;
    };
    if let Ok(ranges) = multipart::assemble(&wanted, &mut parts) {
        assert_eq!(ranges.len(), wanted.len());
        for (got, w) in ranges.iter().zip(&wanted) {
            assert_eq!(
                got.len() as u64,
                w.len,
                "a range assembled with the wrong length"
            );
        }
    }
}

/// The file path the XRootD harness opens.
pub const XROOTD_PATH: &str = "/fuzz/file.root";

/// Target `xrootd_response`: what an XRootD server sends. The first byte picks:
///
/// 0: the body decoders (`kXR_error`, redirect, wait, protocol, login, open, stat,
/// query answers, readv segment and response headers, URLs) on the rest.
/// 1: a session on a recorded server: byte 1 holds flags (1: TLS wanted, 2: open sent
/// with the login, 4: a configuration query sent with the open), the rest is everything
/// the server sends: handshake answer, `kXR_protocol` and `kXR_login` answers (stream ids
/// 1 and 2, the early open 3), authentication, the open (and stat), the close.
/// 2: reads on an open file: byte 1 the number of readv segments (0 to 4), bytes 2..4
/// the length of a `kXR_read`, 3 bytes per segment (u16 offset, length - 1); the rest is
/// the server's answers to the read (stream 1), the readv (stream 2) and a
/// configuration query (stream 3).
pub fn xrootd_response(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => xrootd_decoders(rest),
        1 => {
            let Some((&flags, reply)) = rest.split_first() else {
                return;
            };
            let settings = Settings {
                tls: flags & 1 != 0,
                user: "fuzz".to_string(),
                network: NetworkOptions::default(),
                tls_config: None,
                token: Some("fuzz-token".to_string()),
            };
            let mut conn = Connection::replaying(reply.to_vec());
            let early = (flags & 2 != 0).then_some(XROOTD_PATH);
            let Ok(answer) = conn.set_up("fuzz.invalid", &settings, early) else {
                return;
            };
            let also = (flags & 4 != 0).then(|| Request::QueryConfig {
                names: "readv_iov_max readv_ior_max".into(),
            });
            let opened = match answer {
                Some(Ok(body)) => conn.opened(&body).is_ok(),
                Some(Err(_)) => false,
                None => conn.open_file_and(XROOTD_PATH, also).is_ok(),
            };
            if opened {
                conn.close_file();
            }
        }
        _ => {
            let Some(head) = rest.get(..3) else {
                return;
            };
            let n_segments = usize::from(head[0] % 5);
            let read_len = u16::from_le_bytes([head[1], head[2]]);
            let Some(layout) = rest.get(3..3 + 3 * n_segments) else {
                return;
            };
            let reply = &rest[3 + 3 * n_segments..];
            let segments: Vec<(u64, u32)> = layout
                .chunks_exact(3)
                .map(|s| {
                    (
                        u64::from(u16::from_le_bytes([s[0], s[1]])),
                        u32::from(s[2]) + 1,
                    )
                })
                .collect();
            let handle = [0, 0, 0, 1];
            let mut read_buf = vec![0u8; usize::from(read_len)];
            let mut seg_bufs: Vec<Vec<u8>> = segments
                .iter()
                .map(|&(_, len)| vec![0u8; len as usize])
                .collect();
            let mut calls = vec![
                Call::new(
                    Request::Read {
                        handle,
                        offset: 0,
                        len: u32::from(read_len),
                    },
                    Sink::Read {
                        out: &mut read_buf,
                        filled: 0,
                    },
                ),
                Call::new(
                    Request::ReadV {
                        handle,
                        segments: segments.clone(),
                    },
                    Sink::ReadV(
                        segments
                            .iter()
                            .zip(seg_bufs.iter_mut())
                            .map(|(&(offset, _), out)| Segment {
                                offset,
                                out,
                                done: false,
                            })
                            .collect(),
                    ),
                ),
                Call::new(
                    Request::QueryConfig {
                        names: "readv_iov_max".into(),
                    },
                    Sink::Body(Vec::new()),
                ),
            ];
            let metrics = IoMetrics::default();
            let mut conn = Connection::replaying(reply.to_vec());
            let _ = conn.exchange(&mut calls, Some(&metrics));
        }
    }
}

fn xrootd_decoders(body: &[u8]) {
    if let Some(head) = body.get(..RESPONSE_HEADER_LEN) {
        let mut bytes = [0u8; RESPONSE_HEADER_LEN];
        bytes.copy_from_slice(head);
        let _ = ResponseHeader::decode(&bytes);
    }
    if let Some(head) = body.get(..READV_ELEMENT_LEN) {
        let mut bytes = [0u8; READV_ELEMENT_LEN];
        bytes.copy_from_slice(head);
        let _ = ReadvSegmentHeader::decode(&bytes);
    }
    if let Ok(e) = ServerError::decode(body) {
        let _ = (e.to_string(), e.is_transient());
    }
    let _ = Redirect::decode(body);
    let _ = decode_wait_seconds(body);
    let _ = ProtocolInfo::decode(body);
    let _ = decode_login(body);
    let _ = decode_open(body);
    let _ = StatInfo::decode(body).map(|s| s.is_directory_or_special());
    let _ = decode_query_config(body);
    if let Some(url) = XrdUrl::parse(&String::from_utf8_lossy(body)) {
        let _ = url.path_with_opaque();
    }
}

/// Multipart replies: ranges in order, a coalesced part, an empty preamble, quoted
/// boundary, a part not asked for.
fn multipart_seeds(out: &mut Vec<Seed>) {
    let file: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 256) as u8).collect();
    // (ranges asked (gap, len), parts sent (first, last), content type)
    type Case<'a> = (&'a str, &'a [(u16, u16)], &'a [(u64, u64)], &'a str);
    let cases: [Case<'_>; 4] = [
        (
            "two-parts",
            &[(10, 100), (50, 200)],
            &[(10, 109), (160, 359)],
            "multipart/byteranges; boundary=XyZ",
        ),
        (
            "coalesced",
            &[(0, 10), (5, 10)],
            &[(0, 24)],
            "multipart/byteranges; boundary=\"XyZ\"",
        ),
        (
            "extra-part",
            &[(100, 20)],
            &[(0, 9), (100, 119)],
            "Multipart/ByteRanges;boundary=XyZ",
        ),
        (
            "four-parts",
            &[(1, 1), (1, 1), (1, 1), (1, 1)],
            &[(1, 1), (3, 3), (5, 5), (7, 7)],
            "multipart/byteranges; charset=x; boundary=XyZ",
        ),
    ];
    for (name, ranges, parts, content_type) in cases {
        let mut seed = vec![(ranges.len() - 1) as u8];
        for &(gap, len) in ranges {
            seed.extend_from_slice(&gap.to_le_bytes());
            seed.extend_from_slice(&(len - 1).to_le_bytes());
        }
        seed.extend_from_slice(&(file.len() as u32).to_le_bytes());
        seed.extend_from_slice(content_type.as_bytes());
        seed.push(b'\n');
        seed.extend_from_slice(b"\r\n");
        for &(first, last) in parts {
            seed.extend_from_slice(b"--XyZ\r\nContent-Type: application/octet-stream\r\n");
            seed.extend_from_slice(
                format!("Content-Range: bytes {first}-{last}/{}\r\n\r\n", file.len()).as_bytes(),
            );
            seed.extend_from_slice(&file[first as usize..=last as usize]);
            seed.extend_from_slice(b"\r\n");
        }
        seed.extend_from_slice(b"--XyZ--\r\n");
        out.push(("http_multipart", name.to_string(), seed));
    }
    let mut single = vec![0u8, 0, 0, 9, 0];
    single.extend_from_slice(&4096u32.to_le_bytes());
    single.extend_from_slice(b"bytes 0-9/4096\n");
    out.push(("http_multipart", "content-range".into(), single));
}

/// A response frame: stream id, status, body.
fn frame(stream: u16, status: u16, body: &[u8]) -> Vec<u8> {
    let mut out = stream.to_be_bytes().to_vec();
    out.extend_from_slice(&status.to_be_bytes());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// Server answers: bodies, sessions (with and without the early open, authentication,
/// waits, redirects, errors) and reads.
fn xrootd_seeds(out: &mut Vec<Seed>) {
    use crate::xrootd::protocol::status;
    let tagged = |mode: u8, body: &[u8]| [&[mode][..], body].concat();
    let bodies: [(&str, Vec<u8>); 7] = [
        (
            "error",
            [&3011u32.to_be_bytes()[..], b"no such file\0"].concat(),
        ),
        (
            "redirect",
            [&1094u32.to_be_bytes()[..], b"other.host?tried=a?b"].concat(),
        ),
        (
            "redirect-url",
            [&(-1i32).to_be_bytes()[..], b"root://h.example:2094//x?o=1"].concat(),
        ),
        ("login", b"0123456789abcdef&P=unix&P=ztn,opt\0".to_vec()),
        (
            "open",
            [&[0, 0, 0, 7][..], &[0; 8], b"1 4096 0 1700000000\0"].concat(),
        ),
        ("query", b"1024\n8388608\n".to_vec()),
        (
            "readv-header",
            [
                &[0, 0, 0, 1][..],
                &64u32.to_be_bytes(),
                &128u64.to_be_bytes(),
            ]
            .concat(),
        ),
    ];
    for (name, body) in bodies {
        out.push(("xrootd_response", format!("body-{name}"), tagged(0, &body)));
    }
    let handshake = frame(0, status::OK, &[0, 0, 5, 32, 0, 0, 0, 1]);
    let protocol = |stream| frame(stream, status::OK, &[0, 0, 5, 32, 0, 0, 0, 0]);
    let login = |stream, sec: &[u8]| frame(stream, status::OK, &[&[7u8; 16][..], sec].concat());
    let open = |stream| {
        frame(
            stream,
            status::OK,
            &[&[0, 0, 0, 1][..], &[0; 8], b"0 4096 0 1700000000"].concat(),
        )
    };
    let close = |stream| frame(stream, status::OK, b"");
    // A whole session: handshake, protocol, login, open and close, each answered.
    let session = [
        handshake.clone(),
        protocol(1),
        login(2, b""),
        open(3),
        close(4),
    ]
    .concat();
    let sessions: [(&str, u8, Vec<u8>); 6] = [
        ("session", 0, session.clone()),
        ("session-early-open", 2, session),
        (
            "session-query",
            4,
            [
                handshake.clone(),
                protocol(1),
                login(2, b""),
                open(3),
                frame(4, status::OK, b"1024\n8388608"),
                close(5),
            ]
            .concat(),
        ),
        (
            "session-auth",
            0,
            [
                handshake.clone(),
                protocol(1),
                login(2, b"&P=unix"),
                frame(3, status::OK, b""),
                open(4),
                close(5),
            ]
            .concat(),
        ),
        (
            "session-wait-redirect",
            0,
            [
                handshake.clone(),
                protocol(1),
                login(2, b""),
                frame(3, status::WAIT, &0u32.to_be_bytes()),
                frame(
                    4,
                    status::REDIRECT,
                    &[&1094u32.to_be_bytes()[..], b"elsewhere"].concat(),
                ),
            ]
            .concat(),
        ),
        (
            "session-stat",
            0,
            [
                handshake.clone(),
                protocol(1),
                login(2, b""),
                frame(3, status::OK, &[0, 0, 0, 1]),
                frame(4, status::OK, b"0 4096 0 1700000000\0"),
                close(5),
            ]
            .concat(),
        ),
    ];
    for (name, flags, reply) in sessions {
        out.push((
            "xrootd_response",
            name.to_string(),
            [&[1u8, flags][..], &reply].concat(),
        ));
    }
    // Reads: a kXR_read of 32 bytes in two parts, a readv of two segments, a query; then
    // the same with an error, an asynchronous answer and a wait.
    let read_head = |segments: &[(u16, u8)], read_len: u16| {
        let mut head = vec![2u8, segments.len() as u8];
        head.extend_from_slice(&read_len.to_le_bytes());
        for &(offset, len) in segments {
            head.extend_from_slice(&offset.to_le_bytes());
            head.push(len - 1);
        }
        head
    };
    let segment = |offset: u64, len: u32| {
        let mut s = vec![0, 0, 0, 1];
        s.extend_from_slice(&len.to_be_bytes());
        s.extend_from_slice(&offset.to_be_bytes());
        s.extend(std::iter::repeat_n(0xab, len as usize));
        s
    };
    let readv = [segment(100, 10), segment(300, 20)].concat();
    let attn = {
        let inner = frame(2, status::OK, &readv);
        let mut body = 5008u32.to_be_bytes().to_vec();
        body.extend_from_slice(&[0; 4]);
        body.extend_from_slice(&inner);
        frame(0, status::ATTN, &body)
    };
    let reads: [(&str, Vec<u8>); 4] = [
        (
            "reads",
            [
                frame(1, status::OK_SO_FAR, &[1; 16]),
                frame(1, status::OK, &[2; 16]),
                frame(2, status::OK, &readv),
                frame(3, status::OK, b"1024"),
            ]
            .concat(),
        ),
        (
            "reads-error",
            [
                frame(
                    1,
                    status::ERROR,
                    &[&3012u32.to_be_bytes()[..], b"busy\0"].concat(),
                ),
                frame(2, status::OK, &readv),
                frame(3, status::OK, b"readv_iov_max"),
            ]
            .concat(),
        ),
        (
            "reads-async",
            [
                frame(2, status::WAIT_RESP, &0u32.to_be_bytes()),
                frame(1, status::OK, &[1; 32]),
                attn,
                frame(3, status::OK, b"1024"),
            ]
            .concat(),
        ),
        (
            "reads-wait",
            [
                frame(1, status::WAIT, &0u32.to_be_bytes()),
                frame(2, status::OK, &readv),
                frame(3, status::OK, b"1"),
                frame(4, status::OK, &[1; 32]),
            ]
            .concat(),
        ),
    ];
    for (name, reply) in reads {
        out.push((
            "xrootd_response",
            name.to_string(),
            [read_head(&[(100, 10), (300, 20)], 32), reply].concat(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recorded XRootD session seed is a working session (so the `xrootd_response`
    /// seeds start past the handshake): set-up, open with its stat, close.
    #[test]
    fn recorded_xrootd_session_opens_the_file() {
        let seeds = seeds();
        let session = seeds
            .iter()
            .find(|s| s.0 == "xrootd_response" && s.1 == "session")
            .expect("the session seed");
        let settings = Settings {
            tls: false,
            user: "fuzz".to_string(),
            network: NetworkOptions::default(),
            tls_config: None,
            token: None,
        };
        let mut conn = Connection::replaying(session.2[2..].to_vec());
        let early = conn.set_up("fuzz.invalid", &settings, None).unwrap();
        assert!(early.is_none());
        let (stat, also) = conn.open_file_and(XROOTD_PATH, None).unwrap();
        assert_eq!((stat.size, also.is_none()), (4096, true));
        assert_eq!(conn.handle, Some([0, 0, 0, 1]));
        conn.close_file();
    }
}
