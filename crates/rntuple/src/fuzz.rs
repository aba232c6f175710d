//! Fuzz harnesses: one function per fuzz target of the cargo-fuzz crate in `fuzz/`, each
//! taking arbitrary bytes and never panicking (the results are dropped; only a panic, an
//! abort, a hang or an unbounded allocation is a finding).
//!
//! They live in the crate so that they reach the crate-private parsers (the HTTP
//! multipart reader, the XRootD response handling), and so that `cargo test` replays the
//! committed corpus (`fuzz/corpus/<target>/`) and the crash reproducers
//! (`fuzz/regressions/<target>/`) on stable, with no fuzzing toolchain.
//!
//! Compiled with the `fuzzing` feature (and in the crate's tests); not part of the API.
//! [`seeds`] builds the seed corpus from the conformance files, the test data and the
//! crate's own writer and compressor.

// Fuzz harnesses (test support): a panic is a finding; inputs are small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use crate::compression::{self, Algorithm, CompressionSettings};
use crate::container::RootFile;
use crate::format::{
    open_envelope, Anchor, Cursor, EnvelopeLink, EnvelopeType, Footer, Header, Locator, PageList,
};
use crate::io::http::multipart;
use crate::io::xrootd::connection::{Call, Connection, Segment, Settings, Sink};
use crate::io::xrootd::protocol::{
    decode_login, decode_open, decode_query_config, decode_wait_seconds, ProtocolInfo,
    ReadvSegmentHeader, Redirect, Request, ResponseHeader, ServerError, StatInfo, XrdUrl,
    READV_ELEMENT_LEN, RESPONSE_HEADER_LEN,
};
use crate::io::{ByteRange, IoMetrics, MemorySource, NetworkOptions, Source};
use crate::read::RNTupleReader;
use crate::schema::Descriptor;
use std::path::Path;
use std::sync::Arc;

/// A fuzz target: takes any bytes, never panics.
pub type Target = fn(&[u8]);

/// The parts of a parts input: header, footer and page list payloads, and the file.
pub type Parts<'a> = (&'a [u8], &'a [u8], Vec<&'a [u8]>, &'a [u8]);

/// The fuzz targets, by name (the names of `fuzz/fuzz_targets/*.rs` and of the corpus
/// folders).
pub const TARGETS: [(&str, Target); 6] = [
    ("open_file", open_file),
    ("compression", compression),
    ("envelopes", envelopes),
    ("http_multipart", http_multipart),
    ("xrootd_response", xrootd_response),
    ("recover", recover),
];

/// Target `recover`: the input as a file whose writer died: examined for what can be
/// recovered (its keys walked, envelopes found by their checksums, page lists put
/// together), and every recoverable RNTuple copied into a file in memory, as
/// `rntuple recover` does.
pub fn recover(data: &[u8]) {
    use crate::recover::{examine, write_recovered, FileState};
    let source: Source = Arc::new(MemorySource::new("fuzz.root", data.to_vec()));
    let Ok(FileState::Recoverable(recovery)) = examine(source) else {
        return;
    };
    let Ok(mut file) = crate::container::FileWriter::new(
        std::io::Cursor::new(Vec::new()),
        "out.root",
        CompressionSettings::UNCOMPRESSED,
    ) else {
        return;
    };
    let options =
        crate::write::WriteOptions::default().with_compression(CompressionSettings::UNCOMPRESSED);
    if write_recovered(&recovery, &mut file, &options, |_| {}).is_ok() {
        let _ = file.finish();
    }
}

/// Checkpointed copies of `file`'s RNTuples (a cluster group per small cluster), cut
/// after a page list and before the footer, as a killed writer leaves them: `recover`
/// seeds.
fn recover_seeds(name: &str, file: &[u8], out: &mut Vec<Seed>) {
    let source: Source = Arc::new(MemorySource::new(name, file.to_vec()));
    let Ok(root) = RootFile::open(source) else {
        return;
    };
    let Ok(reader) = RNTupleReader::open(&root, None) else {
        return;
    };
    let Ok(options) = crate::write::WriteOptions::builder()
        .cluster_size(4096)
        .checkpoint_every(1)
        .build()
    else {
        return;
    };
    let Ok(mut copy) = crate::container::FileWriter::new(
        std::io::Cursor::new(Vec::new()),
        "seed.root",
        CompressionSettings::DEFAULT_RNTUPLE,
    ) else {
        return;
    };
    if crate::merge::copy_rntuple(&reader, &mut copy, "ntpl", options, |_| {}).is_err() {
        return;
    }
    let Ok(bytes) = copy.finish_into_inner().map(|c| c.into_inner()) else {
        return;
    };
    // Cut at three places: a third, two thirds, and just before the trailing records.
    for (k, cut) in [bytes.len() / 3, 2 * bytes.len() / 3, bytes.len() - 600]
        .into_iter()
        .enumerate()
    {
        if let Some(prefix) = bytes.get(..cut) {
            out.push(("recover", format!("{name}.cut{k}"), prefix.to_vec()));
        }
    }
}

/// The first bytes of an [`open_file`] input that holds envelope payloads instead of a
/// ROOT file (see [`open_file`]).
pub const PARTS_MAGIC: &[u8; 8] = b"RNTPARTS";

/// The most RNTuples of one input that are read (an input may list many anchors).
const MAX_ANCHORS: usize = 4;
/// The most page lists of a parts input.
const MAX_PAGE_LISTS: usize = 8;
/// The largest expected size of a decompressed block (ROOT's chunks hold less than 16 MiB).
const MAX_BLOCK_LEN: usize = 16 << 20;
/// Up to this expected size, [`compression`] also decompresses into a caller's buffer.
const MAX_INTO_LEN: usize = 1 << 20;

/// Target `open_file`: the input as a ROOT file in memory; every RNTuple anchor in it is
/// opened and every field read over all entries, as columns and as rows, with the
/// linked attribute sets.
///
/// An input starting with [`PARTS_MAGIC`] holds instead the payloads of a header, a
/// footer and page list envelopes, then the file the pages are read from (see
/// [`split_parts`]): an RNTuple opened without envelopes and their checksums, so that
/// mutations of the metadata reach the descriptor and the page decoding.
pub fn open_file(data: &[u8]) {
    if let Some(rest) = data.strip_prefix(PARTS_MAGIC) {
        let Some((header, footer, lists, file)) = split_parts(rest) else {
            return;
        };
        let source: Source = Arc::new(MemorySource::new("fuzz.root", file.to_vec()));
        if let Ok(reader) = RNTupleReader::from_payloads(source, header, footer, &lists) {
            read_everything(&reader, true);
        }
        return;
    }
    let source: Source = Arc::new(MemorySource::new("fuzz.root", data.to_vec()));
    let Ok(file) = RootFile::open(source) else {
        return;
    };
    let _ = file.keys("/");
    let Ok(entries) = file.anchor_entries() else {
        return;
    };
    for entry in entries.iter().take(MAX_ANCHORS) {
        let Ok(key) = file.load_anchor(entry) else {
            continue;
        };
        let Ok(anchor) = Anchor::from_object(&key.object, "anchor") else {
            continue;
        };
        if let Ok(reader) = RNTupleReader::from_anchor(file.source().clone(), anchor, key.path) {
            read_everything(&reader, true);
        }
    }
}

/// Reads every field of `reader` over all its entries (columns), the first entries as
/// rows, each top-level field alone over the second half, and (with `attributes`) the
/// linked attribute sets the same way.
fn read_everything(reader: &RNTupleReader, attributes: bool) {
    let d = reader.descriptor();
    let _ = crate::read::describe(reader);
    let _ = crate::read::uncompressed_bytes(d);
    let n = reader.num_entries();
    let _ = reader.selection_bytes_per_cluster(None);
    let _ = reader.read(None, 0..n);
    let _ = reader.read_entries(None, 0..n.min(3));
    for name in reader
        .readable_fields()
        .iter()
        .map(|&id| d.qualified_name(id))
        .take(16)
    {
        let _ = reader.read(Some(&[name]), n / 2..n);
    }
    if attributes {
        let names: Vec<String> = d.attribute_sets.iter().map(|a| a.name.clone()).collect();
        for name in names.iter().take(2) {
            if let Ok(set) = reader.attribute_set(name) {
                read_everything(&set, false);
            }
        }
    }
}

/// Splits a parts input (after [`PARTS_MAGIC`]): a little-endian u32 length and the
/// header payload, the same for the footer, a byte with the number of page lists, each a
/// u32 length and its payload; the rest is the file.
pub fn split_parts(data: &[u8]) -> Option<Parts<'_>> {
    fn take<'a>(data: &mut &'a [u8]) -> Option<&'a [u8]> {
        let len = u32::from_le_bytes(data.get(..4)?.try_into().ok()?) as usize;
        let part = data.get(4..4usize.checked_add(len)?)?;
        *data = &data[4 + len..];
        Some(part)
    }
    let mut rest = data;
    let header = take(&mut rest)?;
    let footer = take(&mut rest)?;
    let (&n, tail) = rest.split_first()?;
    rest = tail;
    let mut lists = Vec::new();
    for _ in 0..(n as usize).min(MAX_PAGE_LISTS) {
        lists.push(take(&mut rest)?);
    }
    Some((header, footer, lists, rest))
}

/// Builds a parts input (see [`split_parts`]).
pub fn join_parts(header: &[u8], footer: &[u8], lists: &[Vec<u8>], file: &[u8]) -> Vec<u8> {
    let mut out = PARTS_MAGIC.to_vec();
    for part in [header, footer] {
        out.extend_from_slice(&(part.len() as u32).to_le_bytes());
        out.extend_from_slice(part);
    }
    out.push(lists.len().min(MAX_PAGE_LISTS) as u8);
    for list in lists.iter().take(MAX_PAGE_LISTS) {
        out.extend_from_slice(&(list.len() as u32).to_le_bytes());
        out.extend_from_slice(list);
    }
    out.extend_from_slice(file);
    out
}

/// Target `compression`: ROOT compression blocks.
///
/// First byte even: bytes 1..4 are the expected uncompressed size (24-bit little
/// endian), the rest is the block (chunk headers and payloads) given to
/// [`compression::decompress`]. First byte odd: byte 1 picks an algorithm and level, the
/// rest is compressed with [`compression::compress`] and must decompress to itself.
pub fn compression(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        let Some(len) = rest.get(..3) else {
            return;
        };
        let expected =
            (u32::from_le_bytes([len[0], len[1], len[2], 0]) as usize).min(MAX_BLOCK_LEN);
        let block = &rest[3..];
        let _ = compression::claimed_uncompressed_len(block);
        if let Ok(out) = compression::decompress(block, expected, "fuzz block") {
            assert_eq!(out.len(), expected, "decompressed block has the wrong size");
        }
        if expected <= MAX_INTO_LEN {
            let mut out = vec![0u8; expected];
            let _ = compression::decompress_into(block, &mut out, "fuzz block");
        }
        return;
    }
    let Some((&pick, input)) = rest.split_first() else {
        return;
    };
    let algorithm = match pick % 5 {
        0 => Algorithm::Zlib,
        1 => Algorithm::Lzma,
        2 => Algorithm::Lz4,
        3 => Algorithm::Zstd,
        _ => Algorithm::OldRoot,
    };
    let settings = CompressionSettings::new(algorithm, u32::from(pick / 5 % 10));
    let Ok(block) = compression::compress(input, settings) else {
        assert_eq!(
            algorithm,
            Algorithm::OldRoot,
            "compression with {settings} failed"
        );
        return;
    };
    let back = compression::decompress(&block, input.len(), "round trip")
        .unwrap_or_else(|e| panic!("a block compressed with {settings} does not decompress: {e}"));
    assert!(back == input, "{settings} round trip changed the data");
}

/// Target `envelopes`: the metadata parsers. The first byte picks the parser, the rest
/// is its input:
///
/// 0, 1, 2: header, footer, page list payload; 3: anchor object; 4: a whole envelope
/// (type from the next byte) opened and its payload parsed; 5: locators, envelope links
/// and frames; 6: a descriptor built from the parts of a parts input (see
/// [`split_parts`], without the magic).
pub fn envelopes(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 7 {
        0 => drop(Header::read(rest)),
        1 => drop(Footer::read(rest)),
        2 => drop(PageList::read(rest)),
        3 => drop(Anchor::from_object(rest, "anchor")),
        4 => {
            let Some((&kind, envelope)) = rest.split_first() else {
                return;
            };
            let kind = match kind % 3 {
                0 => EnvelopeType::Header,
                1 => EnvelopeType::Footer,
                _ => EnvelopeType::PageList,
            };
            if let Ok((payload, _)) = open_envelope(envelope, kind, "envelope") {
                match kind {
                    EnvelopeType::Header => drop(Header::read(payload)),
                    EnvelopeType::Footer => drop(Footer::read(payload)),
                    EnvelopeType::PageList => drop(PageList::read(payload)),
                }
            }
        }
        5 => {
            for step in 0..3 {
                let mut c = Cursor::new(rest, "fuzz");
                while c.remaining() > 0 {
                    let ok = match step {
                        0 => Locator::read(&mut c).is_ok(),
                        1 => EnvelopeLink::read(&mut c).is_ok(),
                        _ => c.frame().and_then(|f| c.end_frame(&f)).is_ok(),
                    };
                    if !ok {
                        break;
                    }
                }
            }
            let _ = crate::format::read_feature_flags(&mut Cursor::new(rest, "fuzz"));
        }
        _ => {
            let Some((header, footer, lists, _)) = split_parts(rest) else {
                return;
            };
            let (Ok(header), Ok(footer)) = (Header::read(header), Footer::read(footer)) else {
                return;
            };
            let Ok(lists) = lists.iter().map(|l| PageList::read(l)).collect() else {
                return;
            };
            if let Ok(d) = Descriptor::build((1, 0, 0, 0), header, footer, lists) {
                let _ = crate::read::schema_tree(&d);
                let _ = crate::read::uncompressed_bytes(&d);
                for &id in &d.top_level {
                    let _ = d.unreadable_reason(id);
                    let _ = crate::schema::arrow_field(&d, id, "f");
                }
            }
        }
    }
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

/// One seed: its target, a file name, the bytes.
pub type Seed = (&'static str, String, Vec<u8>);

/// The seed corpus: built from the ROOT files of the conformance suite
/// (`<repo>/../shared/conformance/rntuple-validation-1.0/write/`, if present),
/// `<repo>/examples/` and `<repo>/crates/rntuple/tests/data/`, and from blocks, replies
/// and answers made here.
pub fn seeds(repo: &Path) -> std::io::Result<Vec<Seed>> {
    let mut out: Vec<Seed> = Vec::new();
    let mut files = Vec::new();
    for dir in [
        repo.join("../shared/conformance/rntuple-validation-1.0/write"),
        repo.join("examples"),
        repo.join("crates/rntuple/tests/data"),
    ] {
        let Ok(listing) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<_> = listing
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "root"))
            .collect();
        paths.sort();
        for path in paths {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            files.push((name, std::fs::read(&path)?));
        }
    }
    for (name, bytes) in &files {
        out.push(("open_file", format!("{name}.root"), bytes.clone()));
        envelope_seeds(name, bytes, &mut out);
        recover_seeds(name, bytes, &mut out);
    }
    compression_seeds(repo, &files, &mut out)?;
    multipart_seeds(&mut out);
    xrootd_seeds(&mut out);
    Ok(out)
}

/// The envelopes of every RNTuple of `file` as `envelopes` seeds, and as parts inputs
/// of `open_file`.
fn envelope_seeds(name: &str, file: &[u8], out: &mut Vec<Seed>) {
    let source: Source = Arc::new(MemorySource::new(name, file.to_vec()));
    let Ok(root) = RootFile::open(source.clone()) else {
        return;
    };
    let Ok(anchors) = root.rntuple_anchors() else {
        return;
    };
    for (i, key) in anchors.iter().enumerate() {
        let Ok(anchor) = Anchor::from_object(&key.object, "anchor") else {
            continue;
        };
        let stem = format!("{name}.{i}");
        let mut tagged = |mode: u8, what: &str, bytes: &[u8]| {
            let mut seed = vec![mode];
            seed.extend_from_slice(bytes);
            out.push(("envelopes", format!("{stem}.{what}"), seed));
        };
        tagged(3, "anchor", &key.object);
        let envelope = |offset, nbytes, len: u64| -> Option<Vec<u8>> {
            let raw = root.read_blob(offset, nbytes, anchor.max_key_size).ok()?;
            if nbytes == len {
                Some(raw)
            } else {
                compression::decompress(&raw, usize::try_from(len).ok()?, "seed").ok()
            }
        };
        let Some(header) = envelope(anchor.seek_header, anchor.nbytes_header, anchor.len_header)
        else {
            continue;
        };
        let Some(footer) = envelope(anchor.seek_footer, anchor.nbytes_footer, anchor.len_footer)
        else {
            continue;
        };
        let payload = |bytes: &[u8], kind| -> Vec<u8> {
            open_envelope(bytes, kind, "seed")
                .map(|(p, _)| p.to_vec())
                .unwrap_or_default()
        };
        let header_payload = payload(&header, EnvelopeType::Header);
        let footer_payload = payload(&footer, EnvelopeType::Footer);
        let Ok(parsed_footer) = Footer::read(&footer_payload) else {
            continue;
        };
        let mut lists = Vec::new();
        for group in &parsed_footer.cluster_groups {
            let link = group.page_list;
            if let Some(list) = envelope(link.locator.offset, link.locator.size, link.length) {
                lists.push(list);
            }
        }
        let list_payloads: Vec<Vec<u8>> = lists
            .iter()
            .map(|l| payload(l, EnvelopeType::PageList))
            .collect();
        tagged(0, "header", &header_payload);
        tagged(1, "footer", &footer_payload);
        tagged(4, "header-envelope", &[&[0u8][..], &header].concat());
        tagged(4, "footer-envelope", &[&[1u8][..], &footer].concat());
        tagged(5, "links", &footer_payload);
        if let Some(list) = lists.first() {
            tagged(2, "page-list", &list_payloads[0]);
            tagged(4, "page-list-envelope", &[&[2u8][..], list].concat());
        }
        let parts = join_parts(&header_payload, &footer_payload, &list_payloads, &[]);
        tagged(6, "descriptor", &parts[PARTS_MAGIC.len()..]);
        out.push((
            "open_file",
            format!("{stem}.parts"),
            join_parts(&header_payload, &footer_payload, &list_payloads, file),
        ));
    }
}

/// Blocks of every algorithm: ROOT's own (the test data) and the crate's compressor's,
/// at several levels, and round-trip inputs.
fn compression_seeds(
    repo: &Path,
    files: &[(String, Vec<u8>)],
    out: &mut Vec<Seed>,
) -> std::io::Result<()> {
    let block_seed = |expected: usize, block: &[u8]| {
        let mut seed = vec![0u8];
        seed.extend_from_slice(&(expected as u32).to_le_bytes()[..3]);
        seed.extend_from_slice(block);
        seed
    };
    let data_dir = repo.join("crates/rntuple/tests/data");
    if let Ok(input) = std::fs::read(data_dir.join("zip_input.bin")) {
        for name in ["zlib", "lzma", "lz4", "zstd"] {
            if let Ok(block) = std::fs::read(data_dir.join(format!("zip_root_{name}.bin"))) {
                out.push((
                    "compression",
                    format!("root-{name}"),
                    block_seed(input.len(), &block),
                ));
            }
        }
    }
    // A sample that compresses: the start of a ROOT file and a repeating pattern.
    let mut sample: Vec<u8> = files
        .first()
        .map(|(_, b)| b[..b.len().min(2048)].to_vec())
        .unwrap_or_default();
    sample.extend((0..2048u32).map(|i| (i % 251) as u8 ^ (i / 64) as u8));
    for algorithm in [
        Algorithm::Zlib,
        Algorithm::Lzma,
        Algorithm::Lz4,
        Algorithm::Zstd,
    ] {
        for level in [1, 5, 9] {
            let settings = CompressionSettings::new(algorithm, level);
            let Ok(block) = compression::compress(&sample, settings) else {
                continue;
            };
            out.push((
                "compression",
                format!("{algorithm}-{level}"),
                block_seed(sample.len(), &block),
            ));
        }
        let pick = match algorithm {
            Algorithm::Zlib => 0,
            Algorithm::Lzma => 1,
            Algorithm::Lz4 => 2,
            _ => 3,
        } + 5 * 5;
        let mut seed = vec![1u8, pick];
        seed.extend_from_slice(&sample[..1024]);
        out.push(("compression", format!("round-trip-{algorithm}"), seed));
    }
    // Two chunks, the old algorithm's magic, a stored block.
    if let Ok(a) = compression::compress(
        &sample[..2048],
        CompressionSettings::new(Algorithm::Zstd, 5),
    ) {
        if let Ok(b) = compression::compress(
            &sample[2048..],
            CompressionSettings::new(Algorithm::Zlib, 5),
        ) {
            out.push((
                "compression",
                "two-chunks".into(),
                block_seed(sample.len(), &[a, b].concat()),
            ));
        }
    }
    let mut old = b"CS\x08".to_vec();
    old.extend_from_slice(&[4, 0, 0, 8, 0, 0, 1, 2, 3, 4]);
    out.push(("compression", "old-root".into(), block_seed(8, &old)));
    out.push((
        "compression",
        "stored".into(),
        block_seed(16, &sample[..16]),
    ));
    Ok(())
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
    use crate::io::xrootd::protocol::status;
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
    let sessions: [(&str, u8, Vec<u8>); 6] = [
        (
            "session",
            0,
            [
                handshake.clone(),
                protocol(1),
                login(2, b""),
                open(3),
                close(4),
            ]
            .concat(),
        ),
        (
            "session-early-open",
            2,
            [
                handshake.clone(),
                protocol(1),
                login(2, b""),
                open(3),
                close(4),
            ]
            .concat(),
        ),
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
    use std::path::PathBuf;

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    /// Every file of `fuzz/corpus/<target>/` (which must exist and not be empty) and of
    /// `fuzz/regressions/<target>/` (if present) goes through its target: a crash found
    /// once stays fixed.
    #[test]
    fn replay_corpus_and_regressions() {
        for (target, run) in TARGETS {
            let corpus = repo().join("fuzz/corpus").join(target);
            let mut inputs: Vec<PathBuf> = std::fs::read_dir(&corpus)
                .unwrap_or_else(|e| panic!("corpus folder {} is missing: {e}", corpus.display()))
                .map(|e| e.unwrap().path())
                .collect();
            assert!(
                !inputs.is_empty(),
                "corpus folder {} is empty",
                corpus.display()
            );
            if let Ok(listing) = std::fs::read_dir(repo().join("fuzz/regressions").join(target)) {
                inputs.extend(listing.map(|e| e.unwrap().path()));
            }
            inputs.sort();
            for path in inputs {
                let bytes = std::fs::read(&path).unwrap();
                let outcome = std::panic::catch_unwind(|| run(&bytes));
                assert!(outcome.is_ok(), "{target} panics on {}", path.display());
            }
        }
    }

    /// The seeds reach every target, and the compression seeds hold valid blocks of every
    /// algorithm (so that every decoder is reached).
    #[test]
    fn seeds_cover_every_target_and_algorithm() {
        let seeds = seeds(&repo()).unwrap();
        for (target, _) in TARGETS {
            assert!(seeds.iter().any(|s| s.0 == target), "no seed for {target}");
        }
        for magic in [&b"ZS\x01"[..], b"ZL\x08", b"XZ\x00", b"L4\x01"] {
            let block = seeds
                .iter()
                .find(|s| s.0 == "compression" && s.2.get(4..7) == Some(magic))
                .unwrap_or_else(|| panic!("no compression seed with magic {magic:?}"));
            let bytes = &block.2;
            let expected = u32::from_le_bytes([bytes[1], bytes[2], bytes[3], 0]) as usize;
            compression::decompress(&bytes[4..], expected, "seed").unwrap();
        }
        let parts = seeds
            .iter()
            .find(|s| s.0 == "open_file" && s.2.starts_with(PARTS_MAGIC))
            .expect("a parts seed");
        let (h, f, lists, file) = split_parts(&parts.2[PARTS_MAGIC.len()..]).unwrap();
        let source: Source = Arc::new(MemorySource::new("seed", file.to_vec()));
        let reader = RNTupleReader::from_payloads(source, h, f, &lists).unwrap();
        reader.read(None, 0..reader.num_entries()).unwrap();
    }

    /// The recorded XRootD session seed is a working session (so the `xrootd_response`
    /// seeds start past the handshake): set-up, open with its stat, close.
    #[test]
    fn recorded_xrootd_session_opens_the_file() {
        let seeds = seeds(&repo()).unwrap();
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
