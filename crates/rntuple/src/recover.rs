//! Recovering what a writer committed before it died.
//!
//! A writer that is killed (out of memory, a batch queue's time limit, a node failure)
//! before it writes the footer, the anchor and the file's trailing records leaves a file
//! that no reader opens. With checkpoints ([`crate::write::WriteOptions::checkpoint_every`])
//! it has written, after every few clusters, the page list of a cluster group: the
//! location of every page of those clusters, which lie before it in the file.
//!
//! [`examine`] walks the file's keys from its first one (each TFile key records its own
//! offset, so garbage or a truncated tail ends the walk), finds the RNTuple header
//! envelopes and the page list (and footer) envelopes among the RBlob keys (their
//! xxh3 checksums verified), and puts together, per header, the cluster groups whose
//! page lists refer to it, in file order, as far as they continue each other's entries.
//! [`write_recovered`] then copies every entry of those groups into a new file, decoding
//! every page (each page checksum verified) and writing it again. Nothing after the last
//! committed page list is taken: such pages are not described anywhere.

use crate::compression;
use crate::container::{
    FileHeader, FileOutput, FileWriter, KeyHeader, RootFile, ANCHOR_CLASS_NAMES, BLOB_CLASS_NAME,
};
use crate::error::{Error, Result};
use crate::format::{
    open_envelope, Anchor, ClusterGroupRecord, EnvelopeLink, EnvelopeType, Footer, Header, Locator,
    PageList,
};
use crate::io::Source;
use crate::merge::{copy_rntuple, source_compression};
use crate::read::source::Storage;
use crate::read::RNTupleReader;
use crate::write::WriteOptions;

/// The format version recorded for an RNTuple put together from its envelopes (the
/// version is stored only in the anchor, which a dead writer did not write).
const RECOVERED_FORMAT_VERSION: (u16, u16, u16, u16) = (1, 0, 0, 0);

/// Bytes read at a key's offset to parse its header (longer headers are read again).
const KEY_PROBE_LEN: u64 = 1024;

/// What [`examine`] found in a file.
#[derive(Debug)]
pub enum FileState {
    /// The file opens: its RNTuples (paths) are complete, nothing needs recovering.
    Complete {
        /// The RNTuples' paths.
        rntuples: Vec<String>,
    },
    /// The file does not open, and these RNTuples can be recovered from it.
    Recoverable(Recovery),
}

/// The recoverable RNTuples of a broken file.
#[derive(Debug)]
pub struct Recovery {
    /// The broken file's name.
    pub file: String,
    /// Each RNTuple that has something to recover, in the order of their headers.
    pub rntuples: Vec<RecoveredRNTuple>,
    /// Where the walk over the file's keys ended (the offset after the last whole key).
    pub keys_end: u64,
    /// The file's size.
    pub file_size: u64,
}

/// One RNTuple put together from its envelopes.
#[derive(Debug)]
pub struct RecoveredRNTuple {
    /// Its name, from its header.
    pub name: String,
    /// Whether its footer was found (it was complete; only the anchor or the file's
    /// trailing records are missing): then everything it holds is recovered.
    pub had_footer: bool,
    /// Cluster groups recovered.
    pub cluster_groups: usize,
    /// Clusters recovered.
    pub clusters: usize,
    /// Entries recovered.
    pub entries: u64,
    /// Bytes of whole keys found after the RNTuple's last committed page list (pages of
    /// clusters not yet committed, other RNTuples' data): what is not recovered.
    pub bytes_after_last_commit: u64,
    /// What could not be taken, and why.
    pub notes: Vec<String>,
    /// A reader over the recovered clusters of the broken file.
    pub reader: RNTupleReader,
}

/// An envelope found in an RBlob key.
struct FoundEnvelope {
    kind: EnvelopeType,
    /// File offset of the stored (possibly compressed) bytes.
    offset: u64,
    /// Stored bytes.
    stored: u64,
    /// Uncompressed envelope length.
    length: u64,
    /// The envelope's checksum (headers are referred to by theirs).
    checksum: u64,
    /// The payload, between preamble and checksum.
    payload: Vec<u8>,
    /// Where the key ends.
    key_end: u64,
}

/// The keys of a file, walked from the first one.
struct KeyWalk {
    keys: Vec<KeyHeader>,
    /// The offset after the last whole key.
    end: u64,
}

/// Reads the key header at `pos`, if a whole, self-consistent key starts there.
fn key_at(source: &Source, pos: u64, size: u64) -> Option<KeyHeader> {
    let probe = KEY_PROBE_LEN.min(size - pos);
    let data = source.read_at(pos, probe).ok()?;
    let key = match KeyHeader::parse(&data, pos) {
        Ok(key) => key,
        Err(_) => {
            // A header longer than the probe (long names): KeyLen is at bytes 14..16.
            let key_len = u64::from(u16::from_be_bytes([*data.get(14)?, *data.get(15)?]));
            if key_len <= probe || pos + key_len > size {
                return None;
            }
            let data = source.read_at(pos, key_len).ok()?;
            KeyHeader::parse(&data, pos).ok()?
        }
    };
    let whole = key.seek_key == pos
        && u64::from(key.nbytes) >= u64::from(key.key_len)
        && pos + u64::from(key.nbytes) <= size;
    whole.then_some(key)
}

/// Walks the keys from fBEGIN as long as each is whole and records its own offset.
/// A deleted record (negative Nbytes) is stepped over.
fn walk_keys(source: &Source) -> Result<KeyWalk> {
    let size = source.size();
    let not_root = || {
        Error::NotFound(format!(
            "{} is not a ROOT file (no TFile header)",
            source.name()
        ))
    };
    if size < 4 {
        return Err(not_root());
    }
    let head = source.read_at(0, size.min(FileHeader::LARGE_LEN as u64))?;
    let header = FileHeader::parse(&head).map_err(|_| not_root())?;
    let mut pos = u64::from(header.begin);
    let mut keys = Vec::new();
    while pos.saturating_add(4) <= size {
        let Ok(first) = source.read_at(pos, 4) else {
            break;
        };
        let nbytes = i32::from_be_bytes([first[0], first[1], first[2], first[3]]);
        if nbytes < 0 {
            pos += u64::from(nbytes.unsigned_abs());
            continue;
        }
        match key_at(source, pos, size) {
            Some(key) => {
                pos += u64::from(key.nbytes);
                keys.push(key);
            }
            None => break,
        }
    }
    Ok(KeyWalk {
        keys,
        end: pos.min(size),
    })
}

/// The envelope a key holds, if it holds one: stored raw or as ROOT compression blocks
/// that cover the stored bytes exactly (a page with a checksum has 8 more bytes, so
/// pages are passed over without decompressing them), whose checksum verifies.
fn envelope_in(source: &Source, key: &KeyHeader) -> Option<FoundEnvelope> {
    let offset = key.data_offset().ok()?;
    let stored = key.stored_len().ok()?;
    if stored < 16 {
        return None;
    }
    let head = source.read_at(offset, stored.min(16)).ok()?;
    let preamble = u64::from_le_bytes(head.get(..8)?.try_into().ok()?);
    let raw_envelope = preamble >> 16 == stored && (1..=3).contains(&(preamble & 0xffff));
    let bytes = if raw_envelope {
        source.read_at(offset, stored).ok()?
    } else {
        // A compressed envelope: its chunk headers must tile the stored bytes. Walk
        // them one by one (a page's first chunk usually ends 8 bytes short of its key).
        let mut at = 0u64;
        let mut length = 0u64;
        while at < stored {
            let chunk = source
                .read_at(offset + at, compression::CHUNK_HEADER_SIZE as u64)
                .ok()?;
            at += (compression::CHUNK_HEADER_SIZE + compression::u24(&chunk[3..6])) as u64;
            length += compression::u24(&chunk[6..9]) as u64;
        }
        if at != stored || length < 16 {
            return None;
        }
        let data = source.read_at(offset, stored).ok()?;
        let bytes =
            compression::decompress(&data, usize::try_from(length).ok()?, "envelope").ok()?;
        let preamble = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
        if preamble >> 16 != length {
            return None;
        }
        bytes
    };
    let kind =
        EnvelopeType::from_code(u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?) & 0xffff)?;
    let (payload, checksum) = open_envelope(&bytes, kind, "envelope").ok()?;
    Some(FoundEnvelope {
        kind,
        offset,
        stored,
        length: bytes.len() as u64,
        checksum,
        payload: payload.to_vec(),
        key_end: key.seek_key + u64::from(key.nbytes),
    })
}

/// Whether the file opens as it is, with every RNTuple it lists: then it needs no
/// recovery.
fn complete_rntuples(source: &Source) -> Option<Vec<String>> {
    let file = RootFile::open(source.clone()).ok()?;
    let anchors = file.rntuple_anchors().ok()?;
    if anchors.is_empty() {
        return None;
    }
    let mut names = Vec::new();
    for anchor in anchors {
        RNTupleReader::open(&file, Some(&anchor.path)).ok()?;
        names.push(anchor.path);
    }
    Some(names)
}

/// Looks at `source`: complete, or broken with these RNTuples to recover. A file with
/// nothing to recover (not a ROOT file, no RNTuple header, no committed cluster group)
/// is an error that says so.
pub fn examine(source: Source) -> Result<FileState> {
    if let Some(rntuples) = complete_rntuples(&source) {
        return Ok(FileState::Complete { rntuples });
    }
    let name = source.name().to_string();
    let walk = walk_keys(&source)?;
    // The largest RBlob payload is MaxKeySize when a payload spans several keys (its
    // first chunk fills one key exactly), and at least every single-key payload.
    let mut max_key_size = 0u64;
    let mut envelopes = Vec::new();
    let mut anchors = Vec::new();
    for key in &walk.keys {
        if key.class_name == BLOB_CLASS_NAME {
            max_key_size = max_key_size.max(key.stored_len().unwrap_or(0));
            envelopes.extend(envelope_in(&source, key));
        } else if ANCHOR_CLASS_NAMES.contains(&key.class_name.as_str()) {
            anchors.extend(anchor_in(&source, key));
        }
    }
    let mut rntuples = Vec::new();
    let mut headers_without_data = Vec::new();
    for found in envelopes.iter().filter(|e| e.kind == EnvelopeType::Header) {
        let Ok(header) = Header::read(&found.payload) else {
            continue;
        };
        let max_key_size = anchors
            .iter()
            .find(|a: &&Anchor| a.seek_header == found.offset)
            .map_or(max_key_size, |a| a.max_key_size);
        match recover_one(&source, &envelopes, found, header, max_key_size, walk.end)? {
            Some(r) => rntuples.push(r),
            None => headers_without_data.push(found.offset),
        }
    }
    if rntuples.is_empty() {
        let why = if headers_without_data.is_empty() {
            "it holds no RNTuple header".to_string()
        } else {
            "no cluster group was committed before the data ends (no page list is there: the writer stopped before its first checkpoint, or commits only when it closes, as ROOT's writer)".to_string()
        };
        return Err(Error::NotFound(format!(
            "{name}: nothing to recover: {why}"
        )));
    }
    Ok(FileState::Recoverable(Recovery {
        file: name,
        rntuples,
        keys_end: walk.end,
        file_size: source.size(),
    }))
}

/// An anchor key's object, if it parses.
fn anchor_in(source: &Source, key: &KeyHeader) -> Option<Anchor> {
    let stored = source
        .read_at(key.data_offset().ok()?, key.stored_len().ok()?)
        .ok()?;
    let object = if key.is_compressed().ok()? {
        compression::decompress(&stored, key.obj_len as usize, "anchor").ok()?
    } else {
        stored
    };
    Anchor::from_object(&object, "anchor").ok()
}

/// The RNTuple of `header` as far as it can be recovered, or `None` if nothing of it
/// was committed.
fn recover_one(
    source: &Source,
    envelopes: &[FoundEnvelope],
    found: &FoundEnvelope,
    header: Header,
    max_key_size: u64,
    keys_end: u64,
) -> Result<Option<RecoveredRNTuple>> {
    let name = header.name.clone();
    let mine = |kind: EnvelopeType| {
        envelopes
            .iter()
            .filter(move |e| e.kind == kind && e.offset > found.offset)
    };
    let mut anchor = Anchor {
        version_epoch: RECOVERED_FORMAT_VERSION.0,
        version_major: RECOVERED_FORMAT_VERSION.1,
        version_minor: RECOVERED_FORMAT_VERSION.2,
        version_patch: RECOVERED_FORMAT_VERSION.3,
        seek_header: found.offset,
        nbytes_header: found.stored,
        len_header: found.length,
        seek_footer: 0,
        nbytes_footer: 0,
        len_footer: 0,
        max_key_size,
    };
    // A footer: the RNTuple was complete; read it as any reader would.
    let footer = mine(EnvelopeType::Footer)
        .find(|e| Footer::read(&e.payload).is_ok_and(|f| f.header_checksum == found.checksum));
    if let Some(footer) = footer {
        anchor.seek_footer = footer.offset;
        anchor.nbytes_footer = footer.stored;
        anchor.len_footer = footer.length;
        let reader = RNTupleReader::from_anchor(source.clone(), anchor, name.clone())?;
        let d = reader.descriptor();
        return Ok(Some(RecoveredRNTuple {
            name,
            had_footer: true,
            cluster_groups: d.cluster_groups.len(),
            clusters: d.clusters.len(),
            entries: d.n_entries,
            bytes_after_last_commit: 0,
            notes: Vec::new(),
            reader,
        }));
    }
    // Else the page lists that refer to this header, in file order, as long as each
    // continues the entries of the one before.
    let n_columns = header.schema.columns.len();
    let mut notes = Vec::new();
    let mut footer = Footer {
        header_checksum: found.checksum,
        ..Footer::default()
    };
    let mut page_lists = Vec::new();
    let mut next_entry = 0u64;
    let mut last_commit_end = found.key_end;
    let mut dropped_columns = 0usize;
    for e in mine(EnvelopeType::PageList) {
        let Ok(mut list) = PageList::read(&e.payload) else {
            continue;
        };
        if list.header_checksum != found.checksum {
            continue;
        }
        let mut entry = next_entry;
        let continues = list.clusters.iter().all(|c| {
            let ok = c.first_entry == entry;
            entry = c.first_entry.saturating_add(c.n_entries);
            ok
        });
        if !continues || list.clusters.is_empty() {
            notes.push(format!(
                "the page list at byte offset {} does not continue entry {next_entry}; it and any later ones are left out",
                e.offset
            ));
            break;
        }
        // Columns of fields added after the header (late model extension) are
        // described only in the footer, which was never written.
        for columns in &mut list.columns {
            if columns.len() > n_columns {
                dropped_columns = dropped_columns.max(columns.len() - n_columns);
                columns.truncate(n_columns);
            }
        }
        footer.cluster_groups.push(ClusterGroupRecord {
            min_entry: next_entry,
            entry_span: entry - next_entry,
            // Read from a list frame, whose item count is a u32.
            #[allow(clippy::cast_possible_truncation)]
            n_clusters: list.clusters.len() as u32,
            page_list: EnvelopeLink {
                length: e.length,
                locator: Locator::file(e.stored, e.offset),
            },
        });
        next_entry = entry;
        last_commit_end = e.key_end;
        page_lists.push(list);
    }
    if dropped_columns > 0 {
        notes.push(format!(
            "{dropped_columns} columns of fields added after the header (late model extension) are left out: their schema is written only in the footer"
        ));
    }
    if page_lists.is_empty() {
        return Ok(None);
    }
    let bytes_after_last_commit = keys_end.saturating_sub(last_commit_end);
    let clusters = page_lists.iter().map(|l| l.clusters.len()).sum();
    let cluster_groups = page_lists.len();
    let reader = RNTupleReader::from_metadata(
        Storage::new(source.clone(), anchor.max_key_size),
        anchor,
        name.clone(),
        header,
        footer,
        page_lists,
    )?;
    Ok(Some(RecoveredRNTuple {
        name,
        had_footer: false,
        cluster_groups,
        clusters,
        entries: next_entry,
        bytes_after_last_commit,
        notes,
        reader,
    }))
}

/// Writes every recovered RNTuple into `file` (each under its name), decoding every
/// value of every recovered cluster (each page's checksum verified) and writing it again.
/// `progress` gets the entries copied so far, over all RNTuples. The caller finishes
/// `file`.
pub fn write_recovered<W: FileOutput>(
    recovery: &Recovery,
    file: &mut FileWriter<W>,
    options: &WriteOptions,
    mut progress: impl FnMut(u64),
) -> Result<()> {
    let mut done = 0u64;
    for r in &recovery.rntuples {
        let mut options = options.clone();
        if let Some(code) = source_compression(&r.reader) {
            options = options.with_compression(compression::CompressionSettings::from_u32(code)?);
        }
        copy_rntuple(&r.reader, file, &r.name, options, |n| progress(done + n))?;
        done += r.entries;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compression::CompressionSettings;
    use crate::io::MemorySource;
    use std::sync::Arc;

    /// The example file (2000 entries) copied into memory in small clusters, a
    /// checkpoint after each; with its cluster groups' page list ends and entry ends.
    fn checkpointed_copy() -> (RNTupleReader, Vec<u8>, Vec<(u64, u64)>) {
        let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/events.root");
        let source = RNTupleReader::open_path(example, None).unwrap();
        let options = WriteOptions::builder()
            .cluster_size(12_000)
            .checkpoint_every(1)
            .build()
            .unwrap();
        let mut file = FileWriter::new(
            std::io::Cursor::new(Vec::new()),
            "mem.root",
            CompressionSettings::DEFAULT_RNTUPLE,
        )
        .unwrap();
        copy_rntuple(&source, &mut file, "Events", options, |_| {}).unwrap();
        let bytes = file.finish_into_inner().unwrap().into_inner();
        let complete: Source = Arc::new(MemorySource::new("mem.root", bytes.clone()));
        let copy = RNTupleReader::open(&RootFile::open(complete).unwrap(), None).unwrap();
        let d = copy.descriptor();
        let groups = (0..d.cluster_groups.len())
            .map(|g| {
                let link = copy_footer_group(&copy, g);
                (
                    link.page_list.locator.offset + link.page_list.locator.size,
                    link.min_entry + link.entry_span,
                )
            })
            .collect();
        (source, bytes, groups)
    }

    fn copy_footer_group(reader: &RNTupleReader, g: usize) -> ClusterGroupRecord {
        let a = reader.anchor();
        let raw = crate::container::read_blob(
            reader.source().as_ref(),
            a.seek_footer,
            a.nbytes_footer,
            a.max_key_size,
        )
        .unwrap();
        let bytes = compression::decompress(&raw, a.len_footer as usize, "footer").unwrap();
        let (payload, _) = open_envelope(&bytes, EnvelopeType::Footer, "footer").unwrap();
        Footer::read(payload).unwrap().cluster_groups[g]
    }

    fn examine_prefix(bytes: &[u8], len: usize) -> Result<FileState> {
        examine(Arc::new(MemorySource::new(
            "cut.root",
            bytes[..len].to_vec(),
        )))
    }

    #[test]
    fn every_prefix_gives_the_groups_committed_within_it() {
        let (source, bytes, groups) = checkpointed_copy();
        assert!(groups.len() >= 5, "{groups:?}");
        let footer_start = groups.last().unwrap().0 as usize;
        let mut cuts: Vec<usize> = (0..=footer_start).step_by(997).collect();
        for &(end, _) in &groups {
            cuts.extend([end as usize - 1, end as usize, end as usize + 1]);
        }
        for cut in cuts {
            let expected = groups
                .iter()
                .filter(|(end, _)| *end as usize <= cut)
                .map(|&(_, entries)| entries)
                .max()
                .unwrap_or(0);
            match examine_prefix(&bytes, cut) {
                Ok(FileState::Recoverable(r)) => {
                    assert_eq!(r.rntuples.len(), 1);
                    let rec = &r.rntuples[0];
                    assert_eq!(rec.entries, expected, "cut at {cut}");
                    assert!(!rec.had_footer);
                    let got = rec.reader.read(None, 0..expected).unwrap();
                    let want = source.read(None, 0..expected).unwrap();
                    assert_eq!(got, want, "cut at {cut}");
                }
                Ok(FileState::Complete { .. }) => panic!("cut at {cut} is not complete"),
                Err(e) => {
                    assert_eq!(expected, 0, "cut at {cut}: {e}");
                    let text = e.to_string();
                    assert!(
                        text.contains("nothing to recover") || text.contains("not a ROOT file"),
                        "cut at {cut}: {text}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_complete_file_needs_no_recovery_and_a_lost_anchor_keeps_the_footer() {
        let (_, bytes, groups) = checkpointed_copy();
        match examine_prefix(&bytes, bytes.len()).unwrap() {
            FileState::Complete { rntuples } => assert_eq!(rntuples, ["Events"]),
            other => panic!("{other:?}"),
        }
        // Cut after the footer but before the anchor and the trailing records: the
        // footer is found, and with it every entry.
        let after_footer = (groups.last().unwrap().0 as usize..bytes.len())
            .find(|&cut| {
                matches!(examine_prefix(&bytes, cut), Ok(FileState::Recoverable(ref r)) if r.rntuples[0].had_footer)
            })
            .expect("a cut that keeps the footer");
        match examine_prefix(&bytes, after_footer).unwrap() {
            FileState::Recoverable(r) => assert_eq!(r.rntuples[0].entries, 2000),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn garbage_is_a_clear_error() {
        for data in [
            vec![],
            b"root".to_vec(),
            vec![0u8; 5000],
            b"not a root file at all".repeat(100),
        ] {
            let err = examine(Arc::new(MemorySource::new("junk.root", data))).unwrap_err();
            let text = err.to_string();
            assert!(
                text.contains("not a ROOT file") || text.contains("nothing to recover"),
                "{text}"
            );
        }
    }
}
