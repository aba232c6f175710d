//! The body of a `multipart/byteranges` reply (RFC 9110 §14.6), read as a stream and
//! bounded by what was asked for: every limit comes from the requested ranges, never
//! from what the server claims.
//!
//! A part is `--BOUNDARY CRLF headers CRLF CRLF data CRLF`, the last boundary is
//! `--BOUNDARY--`. The data length is taken from the part's `Content-Range`, so data
//! that happens to contain the boundary string is read correctly.

use super::super::ByteRange;
use std::io::{BufRead, Read};

/// The longest line accepted in a part's headers or around the boundaries.
const MAX_LINE: u64 = 8 << 10;
/// The most header lines one part may have.
const MAX_HEADER_LINES: usize = 32;
/// The most bytes accepted before the first boundary.
const MAX_PREAMBLE: usize = 8 << 10;

/// Why a multipart body could not be used.
#[derive(Debug)]
pub(crate) enum MultipartError {
    /// Reading the body failed or it ended early (the connection may be at fault:
    /// worth retrying).
    Io(std::io::Error),
    /// A part's `Content-Range` names a different total size: the file changed.
    SizeChanged {
        /// The size the part claims.
        claimed: u64,
    },
    /// The body breaks the format or exceeds what was asked for.
    Malformed(String),
}

impl From<std::io::Error> for MultipartError {
    fn from(e: std::io::Error) -> Self {
        MultipartError::Io(e)
    }
}

/// One part of the reply: the bytes `[start, start + data.len())` of the file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Part {
    /// Offset of the first byte in the file.
    pub start: u64,
    /// The part's bytes.
    pub data: Vec<u8>,
}

/// What a reply may hold at most.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Parts in the body.
    pub max_parts: usize,
    /// Data bytes of all parts together.
    pub max_data_bytes: u64,
}

impl Limits {
    /// The limits for a request of `wanted` ranges: a part per range, and the requested
    /// bytes plus a quarter (plus 64 KiB) for a server that coalesces ranges separated by
    /// small gaps, as RFC 9110 allows.
    pub(crate) fn for_request(wanted: &[ByteRange]) -> Limits {
        let requested: u64 = wanted.iter().map(|r| r.len).sum();
        Limits {
            max_parts: wanted.len(),
            max_data_bytes: requested
                .saturating_add(requested / 4)
                .saturating_add(64 << 10),
        }
    }
}

/// The boundary named by a `Content-Type: multipart/byteranges; boundary=...` header, or
/// `None` if the reply is not multipart.
pub(crate) fn boundary_of(content_type: &str) -> Option<String> {
    let mut params = content_type.split(';');
    let mime = params.next()?.trim();
    if !mime.eq_ignore_ascii_case("multipart/byteranges") {
        return None;
    }
    params.find_map(|p| {
        let (name, value) = p.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("boundary") {
            return None;
        }
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        // RFC 2046: 1 to 70 characters.
        (!value.is_empty() && value.len() <= 70).then(|| value.to_string())
    })
}

/// Parses `bytes FIRST-LAST/TOTAL` (a `Content-Range` value) into `(first, last, total)`;
/// `total` is `None` for `*`.
pub(crate) fn parse_content_range(value: &str) -> Option<(u64, u64, Option<u64>)> {
    let rest = value.trim().strip_prefix("bytes")?.trim_start();
    let (range, total) = rest.split_once('/')?;
    let (first, last) = range.trim().split_once('-')?;
    let first: u64 = first.trim().parse().ok()?;
    let last: u64 = last.trim().parse().ok()?;
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse().ok()?),
    };
    (first <= last && total.is_none_or(|t| last < t)).then_some((first, last, total))
}

/// Reads a line of at most [`MAX_LINE`] bytes (with its line end); `None` at the end of
/// the body.
fn read_line(body: &mut impl BufRead) -> Result<Option<Vec<u8>>, MultipartError> {
    let mut line = Vec::new();
    body.by_ref().take(MAX_LINE).read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        if line.len() as u64 >= MAX_LINE {
            return Err(MultipartError::Malformed(format!(
                "a line longer than {MAX_LINE} bytes"
            )));
        }
        return Err(MultipartError::Io(std::io::ErrorKind::UnexpectedEof.into()));
    }
    Ok(Some(line))
}

/// A line without its line end and trailing blanks (RFC 2046 allows blanks after a
/// boundary).
fn trimmed(line: &[u8]) -> &[u8] {
    let end = line
        .iter()
        .rposition(|b| !matches!(b, b'\r' | b'\n' | b' ' | b'\t'))
        .map_or(0, |i| i + 1);
    &line[..end]
}

/// What a boundary line says.
enum Delimiter {
    /// Another part follows.
    Next,
    /// The body is complete.
    Close,
}

fn delimiter(line: &[u8], boundary: &[u8]) -> Option<Delimiter> {
    let rest = trimmed(line).strip_prefix(b"--")?.strip_prefix(boundary)?;
    match rest {
        b"" => Some(Delimiter::Next),
        b"--" => Some(Delimiter::Close),
        _ => None,
    }
}

/// Reads a part's headers (up to the empty line) and returns its `Content-Range`.
fn read_part_headers(body: &mut impl BufRead) -> Result<(u64, u64, u64), MultipartError> {
    let mut content_range = None;
    for _ in 0..MAX_HEADER_LINES {
        let line =
            read_line(body)?.ok_or(MultipartError::Io(std::io::ErrorKind::UnexpectedEof.into()))?;
        let line = trimmed(&line);
        if line.is_empty() {
            return content_range.ok_or_else(|| {
                MultipartError::Malformed("a part without a valid Content-Range".into())
            });
        }
        let text = String::from_utf8_lossy(line);
        if let Some((name, value)) = text.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-range") {
                let (first, last, total) = parse_content_range(value).ok_or_else(|| {
                    MultipartError::Malformed(format!("bad Content-Range \"{}\"", value.trim()))
                })?;
                let total = total.ok_or_else(|| {
                    MultipartError::Malformed("a part's Content-Range has no total size".into())
                })?;
                content_range = Some((first, last, total));
            }
        }
    }
    Err(MultipartError::Malformed(format!(
        "a part with more than {MAX_HEADER_LINES} header lines"
    )))
}

/// Reads the parts of a `multipart/byteranges` body with boundary `boundary`, sent for
/// the sorted, disjoint ranges `wanted` of a file of `size` bytes. Parts that overlap no
/// wanted range are skipped without being kept. Stops after the closing boundary. A
/// part's bytes go in `buffer(len)`, a buffer of exactly `len` bytes (its contents are
/// overwritten).
pub(crate) fn read_parts(
    body: &mut impl BufRead,
    boundary: &str,
    wanted: &[ByteRange],
    size: u64,
    limits: Limits,
    buffer: &dyn Fn(usize) -> Vec<u8>,
) -> Result<Vec<Part>, MultipartError> {
    let mut size = Some(size);
    read_parts_of(body, boundary, Some(wanted), &mut size, limits, buffer)
}

/// Reads every part of a `multipart/byteranges` body with boundary `boundary` whose
/// ranges are not known in advance (a request with a suffix range, `bytes=0-99,-100`, at
/// opening): the file size comes from the first part's `Content-Range`, and every other
/// part must name the same. Returns the parts and the size (`None` for a body without a
/// part).
pub(crate) fn read_all_parts(
    body: &mut impl BufRead,
    boundary: &str,
    limits: Limits,
    buffer: &dyn Fn(usize) -> Vec<u8>,
) -> Result<(Vec<Part>, Option<u64>), MultipartError> {
    let mut size = None;
    let parts = read_parts_of(body, boundary, None, &mut size, limits, buffer)?;
    Ok((parts, size))
}

/// [`read_parts`] and [`read_all_parts`]: `wanted` `None` keeps every part; `size` `None`
/// is learnt from the first part.
fn read_parts_of(
    body: &mut impl BufRead,
    boundary: &str,
    wanted: Option<&[ByteRange]>,
    size: &mut Option<u64>,
    limits: Limits,
    buffer: &dyn Fn(usize) -> Vec<u8>,
) -> Result<Vec<Part>, MultipartError> {
    let boundary = boundary.as_bytes();
    // The preamble: anything before the first boundary (usually an empty line).
    let mut preamble = 0usize;
    loop {
        let line =
            read_line(body)?.ok_or(MultipartError::Io(std::io::ErrorKind::UnexpectedEof.into()))?;
        match delimiter(&line, boundary) {
            Some(Delimiter::Next) => break,
            Some(Delimiter::Close) => return Ok(Vec::new()),
            None => {
                preamble += line.len();
                if preamble > MAX_PREAMBLE {
                    return Err(MultipartError::Malformed(
                        "no multipart boundary at the start of the body".into(),
                    ));
                }
            }
        }
    }
    let mut parts = Vec::new();
    let mut n_parts = 0usize;
    let mut data_bytes = 0u64;
    loop {
        let (first, last, total) = read_part_headers(body)?;
        if *size.get_or_insert(total) != total {
            return Err(MultipartError::SizeChanged { claimed: total });
        }
        n_parts += 1;
        if n_parts > limits.max_parts {
            return Err(MultipartError::Malformed(format!(
                "more parts than the {} ranges requested",
                limits.max_parts
            )));
        }
        // `parse_content_range` checked first <= last < total.
        let len = last - first + 1;
        data_bytes = data_bytes.saturating_add(len);
        if data_bytes > limits.max_data_bytes {
            return Err(MultipartError::Malformed(format!(
                "parts hold more than the {} bytes allowed for this request",
                limits.max_data_bytes
            )));
        }
        let overlaps = wanted.is_none_or(|wanted| {
            wanted
                .iter()
                .any(|w| first < w.offset + w.len && w.offset <= last)
        });
        let mut data_reader = body.by_ref().take(len);
        let read = if overlaps {
            // `len` is bounded by the requested bytes (max_data_bytes) above.
            let mut data = buffer(usize::try_from(len).map_err(|_| {
                MultipartError::Malformed(format!("a part of {len} bytes does not fit in memory"))
            })?);
            // `data` has exactly `len` bytes, all written here.
            data_reader.read_exact(&mut data)?;
            parts.push(Part { start: first, data });
            len
        } else {
            std::io::copy(&mut data_reader, &mut std::io::sink())?
        };
        if read != len {
            return Err(MultipartError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        // The data ends with the line end that belongs to the next boundary.
        let line_end =
            read_line(body)?.ok_or(MultipartError::Io(std::io::ErrorKind::UnexpectedEof.into()))?;
        if !trimmed(&line_end).is_empty() {
            return Err(MultipartError::Malformed(format!(
                "the part for bytes {first}-{last} is longer than its Content-Range"
            )));
        }
        let line =
            read_line(body)?.ok_or(MultipartError::Io(std::io::ErrorKind::UnexpectedEof.into()))?;
        match delimiter(&line, boundary) {
            Some(Delimiter::Next) => {}
            Some(Delimiter::Close) => return Ok(parts),
            None => {
                return Err(MultipartError::Malformed(format!(
                    "no boundary after the part for bytes {first}-{last}"
                )))
            }
        }
    }
}

/// The bytes of each range of `wanted` (sorted and disjoint), cut from the parts that
/// cover them; a part that is exactly one wanted range is moved, not copied. A range no
/// single part covers is an error naming it.
pub(crate) fn assemble(wanted: &[ByteRange], parts: &mut [Part]) -> Result<Vec<Vec<u8>>, String> {
    wanted
        .iter()
        .map(|w| {
            let end = w.offset + w.len;
            let part = parts
                .iter_mut()
                .find(|p| p.start <= w.offset && end <= p.start + p.data.len() as u64)
                .ok_or_else(|| {
                    format!(
                        "the reply lacks bytes {}-{} that were requested",
                        w.offset,
                        end.saturating_sub(1)
                    )
                })?;
            if part.start == w.offset && part.data.len() as u64 == w.len {
                // Wanted ranges are disjoint: no other range needs this part.
                Ok(std::mem::take(&mut part.data))
            } else {
                // `w` lies inside the part, whose bytes are in memory.
                #[allow(clippy::cast_possible_truncation)]
                let (from, len) = ((w.offset - part.start) as usize, w.len as usize);
                Ok(part.data[from..from + len].to_vec())
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: u64 = 1000;

    fn file_bytes() -> Vec<u8> {
        (0..SIZE).map(|i| (i * 7 % 251) as u8).collect()
    }

    fn r(offset: u64, len: u64) -> ByteRange {
        ByteRange { offset, len }
    }

    /// A body as nginx writes it, with the parts `(first, last)` in the given order.
    fn body(boundary: &str, parts: &[(u64, u64)], total: u64) -> Vec<u8> {
        crate::multipart_body::multipart_body(boundary, &file_bytes(), parts, total)
    }

    fn parse(body: &[u8], wanted: &[ByteRange]) -> Result<Vec<Vec<u8>>, String> {
        let mut parts = read_parts(
            &mut &body[..],
            "XyZ",
            wanted,
            SIZE,
            Limits::for_request(wanted),
            &|n| vec![0; n],
        )
        .map_err(|e| format!("{e:?}"))?;
        assemble(wanted, &mut parts)
    }

    fn expected(wanted: &[ByteRange]) -> Vec<Vec<u8>> {
        let file = file_bytes();
        wanted
            .iter()
            .map(|w| file[w.offset as usize..(w.offset + w.len) as usize].to_vec())
            .collect()
    }

    #[test]
    fn boundary_and_content_range_headers() {
        assert_eq!(
            boundary_of("multipart/byteranges; boundary=00000000000000000001").as_deref(),
            Some("00000000000000000001")
        );
        assert_eq!(
            boundary_of("Multipart/ByteRanges;charset=x; BOUNDARY=\"a b\"").as_deref(),
            Some("a b")
        );
        assert_eq!(boundary_of("multipart/byteranges"), None);
        assert_eq!(boundary_of("multipart/byteranges; boundary="), None);
        assert_eq!(boundary_of("application/octet-stream"), None);
        assert_eq!(
            parse_content_range("bytes 0-0/1234"),
            Some((0, 0, Some(1234)))
        );
        assert_eq!(parse_content_range("bytes 5-9/*"), Some((5, 9, None)));
        assert_eq!(parse_content_range("bytes 9-5/100"), None);
        assert_eq!(parse_content_range("bytes 5-100/100"), None);
        assert_eq!(parse_content_range("bytes */100"), None);
        assert_eq!(
            parse_content_range("bytes 0-99999999999999999999999/1"),
            None
        );
    }

    #[test]
    fn parts_in_any_order_map_to_the_requested_ranges() {
        let wanted = [r(10, 5), r(100, 50), r(900, 100)];
        let b = body("XyZ", &[(900, 999), (10, 14), (100, 149)], SIZE);
        assert_eq!(parse(&b, &wanted).unwrap(), expected(&wanted));
    }

    #[test]
    fn coalesced_and_overlapping_parts_cover_the_ranges_they_span() {
        let wanted = [r(10, 5), r(20, 5), r(500, 10)];
        // The server merged the first two (gap of 5 bytes) and sent an overlapping extra.
        let b = body("XyZ", &[(10, 24), (500, 509), (505, 509)], SIZE);
        assert_eq!(parse(&b, &wanted).unwrap(), expected(&wanted));
    }

    #[test]
    fn boundary_bytes_inside_the_data_are_data() {
        let wanted = [r(0, 12), r(50, 3)];
        let mut b = Vec::new();
        b.extend_from_slice(b"--XyZ\r\nContent-Range: bytes 0-11/1000\r\n\r\n");
        b.extend_from_slice(b"\r\n--XyZ--\r\n!"); // 12 bytes of data
        b.extend_from_slice(b"\r\n--XyZ\r\ncontent-range:bytes 50-52/1000\r\n\r\nabc");
        b.extend_from_slice(b"\r\n--XyZ--\r\n");
        let got = parse(&b, &wanted).unwrap();
        assert_eq!(got, vec![b"\r\n--XyZ--\r\n!".to_vec(), b"abc".to_vec()]);
    }

    #[test]
    fn a_missing_range_is_an_error_naming_it() {
        let wanted = [r(10, 5), r(100, 50)];
        let b = body("XyZ", &[(10, 14)], SIZE);
        let err = parse(&b, &wanted).unwrap_err();
        assert!(err.contains("100-149"), "{err}");
        // A part that covers only half of a range does not cover it.
        let b = body("XyZ", &[(10, 14), (100, 120)], SIZE);
        assert!(parse(&b, &wanted).unwrap_err().contains("100-149"));
    }

    #[test]
    fn unrequested_parts_are_skipped_within_the_limits() {
        let wanted = [r(10, 5), r(100, 50)];
        let b = body("XyZ", &[(600, 609), (10, 14), (100, 149)], SIZE);
        // Three parts for two ranges: over the part limit.
        assert!(parse(&b, &wanted).unwrap_err().contains("more parts"));
        let mut parts = read_parts(
            &mut &b[..],
            "XyZ",
            &wanted,
            SIZE,
            Limits {
                max_parts: 3,
                max_data_bytes: 1000,
            },
            &|n| vec![0; n],
        )
        .unwrap();
        assert_eq!(parts.len(), 2, "the unrequested part is not kept");
        assert_eq!(assemble(&wanted, &mut parts).unwrap(), expected(&wanted));
    }

    #[test]
    fn hostile_bodies_are_errors_not_allocations() {
        let wanted = [r(10, 5), r(100, 50)];
        // No boundary at all.
        let err = parse(&[b'x'; 20000], &wanted).unwrap_err();
        assert!(
            err.contains("line longer") || err.contains("no multipart"),
            "{err}"
        );
        let err = parse(&b"hello\r\n".repeat(3000), &wanted).unwrap_err();
        assert!(err.contains("no multipart boundary"), "{err}");
        // The wrong boundary.
        let b = body("Other", &[(10, 14), (100, 149)], SIZE);
        assert!(parse(&b, &wanted).is_err());
        // A truncated part: an I/O error (retryable), not short data.
        let b = body("XyZ", &[(10, 14), (100, 149)], SIZE);
        let err = parse(&b[..b.len() - 30], &wanted).unwrap_err();
        assert!(err.contains("UnexpectedEof"), "{err}");
        // No closing boundary.
        let err = parse(&b[..b.len() - 11], &wanted).unwrap_err();
        assert!(err.contains("UnexpectedEof"), "{err}");
        // A huge claimed length: refused before any allocation.
        let huge =
            b"--XyZ\r\nContent-Range: bytes 0-999999999999/1000000000000\r\n\r\nabc".to_vec();
        let err = read_parts(
            &mut &huge[..],
            "XyZ",
            &wanted,
            1_000_000_000_000,
            Limits::for_request(&wanted),
            &|n| vec![0; n],
        )
        .unwrap_err();
        assert!(format!("{err:?}").contains("more than the"), "{err:?}");
        // A part whose data runs past its Content-Range.
        let mut b = body("XyZ", &[(10, 14)], SIZE);
        let after_data = b.len() - "\r\n--XyZ--\r\n".len();
        b.splice(after_data..after_data, *b"junk");
        assert!(parse(&b, &[r(10, 5)]).unwrap_err().contains("longer than"));
        // A part without Content-Range, and one with a bad one.
        let b = b"--XyZ\r\nContent-Type: x\r\n\r\nabc\r\n--XyZ--\r\n";
        assert!(parse(b, &wanted).unwrap_err().contains("Content-Range"));
        let b = b"--XyZ\r\nContent-Range: bytes 20-10/1000\r\n\r\nabc\r\n--XyZ--\r\n";
        assert!(parse(b, &wanted).unwrap_err().contains("bad Content-Range"));
        // Endless headers.
        let mut b = b"--XyZ\r\n".to_vec();
        b.extend_from_slice(&b"X-A: b\r\n".repeat(100));
        assert!(parse(&b, &wanted).unwrap_err().contains("header lines"));
    }

    #[test]
    fn a_different_total_size_means_the_file_changed() {
        let wanted = [r(10, 5), r(100, 50)];
        let b = body("XyZ", &[(10, 14), (100, 149)], SIZE + 1);
        let err = read_parts(
            &mut &b[..],
            "XyZ",
            &wanted,
            SIZE,
            Limits::for_request(&wanted),
            &|n| vec![0; n],
        )
        .unwrap_err();
        assert!(matches!(err, MultipartError::SizeChanged { claimed: 1001 }));
    }

    #[test]
    fn an_exact_part_is_moved_and_a_covering_part_is_cut() {
        let wanted = [r(0, 4), r(8, 2)];
        let mut parts = vec![
            Part {
                start: 0,
                data: b"abcd".to_vec(),
            },
            Part {
                start: 6,
                data: b"ghijkl".to_vec(),
            },
        ];
        let got = assemble(&wanted, &mut parts).unwrap();
        assert_eq!(got, vec![b"abcd".to_vec(), b"ij".to_vec()]);
        assert!(parts[0].data.is_empty(), "moved");
        assert_eq!(parts[1].data, b"ghijkl");
    }
}
