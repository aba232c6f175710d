//! Fuzz harnesses: one function per fuzz target of the cargo-fuzz crate in `fuzz/`, each
//! taking arbitrary bytes and never panicking (the results are dropped; only a panic, an
//! abort, a hang or an unbounded allocation is a finding).
//!
//! They live in the crate so that they reach the crate-private parsers, and so that
//! `cargo test` replays the
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
use crate::io::fuzz::{http_multipart, xrootd_response, Seed};
use crate::io::{MemorySource, Source};
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
    out.extend(crate::io::fuzz::seeds());
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
}
