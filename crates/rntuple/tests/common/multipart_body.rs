//! A `multipart/byteranges` body as nginx writes it: one file for the unit tests of the
//! HTTP source's reply parser (`rntuple-io`'s `lib.rs` includes it, for
//! `http/multipart.rs`) and the HTTP source's tests against a fake server
//! (`tests/http_source.rs`).

/// The body of a `multipart/byteranges` reply delimited by `boundary`: the parts
/// `(first, last)` (inclusive byte positions of `file`) in the order given, each with
/// its `Content-Range` naming `total` as the file's size.
pub(crate) fn multipart_body(
    boundary: &str,
    file: &[u8],
    parts: &[(u64, u64)],
    total: u64,
) -> Vec<u8> {
    let mut out = Vec::new();
    for &(first, last) in parts {
        out.extend_from_slice(
            format!(
                "\r\n--{boundary}\r\nContent-Type: application/octet-stream\r\n\
                 Content-Range: bytes {first}-{last}/{total}\r\n\r\n"
            )
            .as_bytes(),
        );
        out.extend_from_slice(&file[first as usize..=last as usize]);
    }
    out.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    out
}
