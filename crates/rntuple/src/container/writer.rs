//! Writing a minimal, valid TFile around RNTuple pages and envelopes.
//!
//! The layout follows what ROOT 6.40's own RNTuple writer produces when it creates a
//! file (`RNTupleWriter::Recreate`), record for record:
//!
//! | record | size |
//! |---|---|
//! | file header, zero-padded to fBEGIN = 100 | 100 |
//! | top directory key: class `TFile`, name = file name; object = TNamed (name, empty title) + directory record (60) | 2 × (34 + 7 + 1 + n + 1) + 60 |
//! | RBlob keys (class `RBlob`, empty name and title, 64-bit key version 1004, SeekPdir 100) | 42 + payload each |
//! | `ROOT::RNTuple` anchor keys (object 78 bytes, compressed when that is smaller) | 34 + 14 + 1 + name + 1 + 78 |
//! | keys list: key (empty class, name = file name), count, one key header per anchor | 34 + 3 + n + 4 + Σ anchor key headers |
//! | StreamerInfo: key `TList` / `StreamerInfo` / `Doubly linked list` (72) + the TList of TStreamerInfo, compressed when smaller | 72 + 1254 uncompressed |
//! | free segments: key (empty class, name = file name) + one free segment (10, or 18 in large files) | 34 + 3 + n + 10 |
//!
//! where `n` is the length of the file name. The header and the top directory record are
//! written at [`FileWriter::create`] and patched at [`FileWriter::finish`]. When the
//! end of the file, the streamer info or the free segments lie beyond 2 GiB, the header
//! switches to its 64-bit variant (fVersion + 1,000,000); when the keys list does, so
//! does the directory record (version + 1000). Keys are always written with 64-bit seek
//! pointers (key version 1004), as ROOT does.
//!
//! Unlike ROOT's writer, which embeds exactly one RNTuple per file it creates, any
//! number of anchors can be added ([`FileWriter::write_anchor`]).

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use super::blob::BlobLayout;
use super::cursor::tstring_len;
use super::directory::{write_keys_list, DirectoryRecord};
use super::file_header::FileHeader;
use super::key::KeyHeader;
use super::streamer_info::{streamer_info_list, StreamerInfo};
use super::{ANCHOR_CLASS_NAMES, BLOB_CLASS_NAME};
use crate::compression::{
    compress, u24_le, Algorithm, CompressionSettings, CHUNK_HEADER_SIZE, MAX_CHUNK_SIZE,
};
use crate::error::{Error, Result};
use crate::io::{AtomicFile, Existing};

/// fBEGIN: where the first key (the top directory's) starts, as the file header's u32.
const BEGIN_U32: u32 = 100;
/// fBEGIN as a file offset.
const BEGIN: u64 = BEGIN_U32 as u64;
/// The ROOT version this writer claims in the file header (6.40/00).
pub const ROOT_VERSION_CODE: u32 = 64000;
/// Key format version: 4, plus 1000 for 64-bit seek pointers (always used, as in ROOT).
const KEY_VERSION: u16 = 1004;
/// Directory record class version (small variant; + 1000 for 64-bit pointers).
const DIRECTORY_VERSION: u16 = 5;
/// Class name of the keys of sub-directories as ROOT 6 stores them (it shows them as
/// `TDirectoryFile`; its RNTuple reader looks for exactly `TDirectory`).
const SUB_DIRECTORY_CLASS: &str = "TDirectory";
/// Free-segment record version (small variant; + 1000 for 64-bit pointers).
const FREE_SEGMENT_VERSION: u16 = 1;
/// The largest value a 32-bit seek pointer holds.
const MAX_SMALL_SEEK: u64 = i32::MAX as u64;

/// Where a [`FileWriter`] puts its bytes: any seekable writer, told when the file is
/// complete. An [`AtomicFile`] then renames itself over its destination; other writers
/// flush.
pub trait FileOutput: Write + Seek {
    /// Called once the last byte of the file is written.
    fn complete(&mut self) -> Result<()>;

    /// Hands the bytes written so far to the operating system (a checkpoint: they then
    /// survive the writing process being killed).
    fn checkpoint(&mut self) -> Result<()>;
}

/// A plain writer's completion: a flush.
macro_rules! flushing_output {
    ($($t:ty),*) => {$(
        impl FileOutput for $t {
            fn complete(&mut self) -> Result<()> {
                self.flush().map_err(|e| Error::Io(crate::io::Error::Write { what: "the output".into(), source: e }))
            }

            fn checkpoint(&mut self) -> Result<()> {
                self.complete()
            }
        }
    )*};
}
flushing_output!(
    File,
    std::io::Cursor<Vec<u8>>,
    std::io::Cursor<&mut Vec<u8>>
);

impl<W: Write + Seek> FileOutput for std::io::BufWriter<W> {
    fn complete(&mut self) -> Result<()> {
        self.flush().map_err(|e| {
            Error::Io(crate::io::Error::Write {
                what: "the output".into(),
                source: e,
            })
        })
    }

    fn checkpoint(&mut self) -> Result<()> {
        self.complete()
    }
}

impl FileOutput for AtomicFile {
    fn complete(&mut self) -> Result<()> {
        Ok(self.commit()?)
    }

    fn checkpoint(&mut self) -> Result<()> {
        Ok(self.flush_to_os()?)
    }
}

/// ROOT's packed date/time (`TDatime`) of the current UTC time.
pub fn datime_now() -> u32 {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    datime_from_unix(secs)
}

/// ROOT's packed date/time for a Unix time (UTC): `(year - 1995) << 26 | month << 22 |
/// day << 17 | hour << 12 | minute << 6 | second`.
pub fn datime_from_unix(secs: u64) -> u32 {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let year = year.clamp(1995, 1995 + 63) as u32;
    // The civil-date algorithm gives a month in 1..=12 and a day in 1..=31.
    #[allow(clippy::cast_possible_truncation)]
    let (month, day) = (month as u32, day as u32);
    ((year - 1995) << 26)
        | (month << 22)
        | (day << 17)
        | (((rem / 3600) as u32) << 12)
        | ((((rem / 60) % 60) as u32) << 6)
        | ((rem % 60) as u32)
}

/// Compresses a key's object the way ROOT's RNTuple writer does for the anchor and the
/// streamer info: the compressed form is used only when it is smaller than the input,
/// and (as ROOT hands the compressor an output buffer as large as the input) zstd must
/// produce it within `input length - 9` bytes of output space, which libzstd sometimes
/// cannot do even when its unconstrained output would be smaller. Returns the bytes to
/// store (the input itself when not compressed).
fn compress_key_object(data: &[u8], settings: CompressionSettings) -> Result<Vec<u8>> {
    if settings.is_compressed()
        && settings.algorithm == Algorithm::Zstd
        && data.len() > CHUNK_HEADER_SIZE
        && data.len() <= MAX_CHUNK_SIZE
    {
        let mut frame = vec![0u8; data.len() - CHUNK_HEADER_SIZE];
        let level = 2 * settings.level.min(9) as i32;
        return Ok(
            match zstd::bulk::compress_to_buffer(data, &mut frame[..], level) {
                Ok(n) if n + CHUNK_HEADER_SIZE < data.len() => {
                    let mut out = Vec::with_capacity(CHUNK_HEADER_SIZE + n);
                    out.extend_from_slice(b"ZS\x01");
                    // n < data.len() <= MAX_CHUNK_SIZE: both fit 24 bits.
                    out.extend_from_slice(&u24_le(n));
                    out.extend_from_slice(&u24_le(data.len()));
                    out.extend_from_slice(&frame[..n]);
                    out
                }
                _ => data.to_vec(),
            },
        );
    }
    let zipped = compress(data, settings)?;
    Ok(if zipped.len() < data.len() {
        zipped
    } else {
        data.to_vec()
    })
}

/// A version-1-style UUID (time-based, random node) in ROOT's byte order.
fn new_uuid() -> [u8; 16] {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // 100 ns intervals since 1582-10-15; a UUID keeps only the low 60 bits of them, so
    // the narrowing keeps every bit that is used.
    #[allow(clippy::cast_possible_truncation)]
    let ts = (now / 100 + 0x01B2_1DD2_1381_4000) as u64;
    let mut h = RandomState::new().build_hasher();
    h.write_u128(now);
    h.write_u32(std::process::id());
    let random = h.finish();
    let mut u = [0u8; 16];
    // time_low and time_mid: the low 32 and the next 16 bits of the timestamp.
    #[allow(clippy::cast_possible_truncation)]
    let (time_low, time_mid) = (ts as u32, (ts >> 32) as u16);
    u[0..4].copy_from_slice(&time_low.to_be_bytes());
    u[4..6].copy_from_slice(&time_mid.to_be_bytes());
    u[6..8].copy_from_slice(&((((ts >> 48) as u16) & 0x0FFF) | 0x1000).to_be_bytes());
    u[8..16].copy_from_slice(&random.to_be_bytes());
    u[8] = (u[8] & 0x3F) | 0x80; // variant
    u[10] |= 0x01; // multicast bit: a random node, not a MAC address
    u
}

/// Writes a ROOT file (TFile) holding RNTuples: RBlob keys for pages and envelopes, one
/// `ROOT::RNTuple` anchor key per RNTuple, and the records that make it a valid TFile.
/// See the module documentation for the layout.
///
/// Records are written in file order as they come; [`FileWriter::finish`] appends the
/// keys list, the streamer info and the free segments, then patches the file header and
/// the top directory. A writer dropped without `finish` leaves an incomplete file (for
/// an [`AtomicFile`], no file: the temporary one is removed).
#[derive(Debug)]
pub struct FileWriter<W: FileOutput = AtomicFile> {
    out: W,
    /// The file name stored in the top directory's key and the trailing records.
    file_name: String,
    /// The output as error messages name it (its path, when known).
    output_name: String,
    compression: CompressionSettings,
    datime: u32,
    uuid: [u8; 16],
    /// Offset of the next key.
    pos: u64,
    /// Where the writer's cursor is in `out` (to avoid needless seeks).
    out_pos: u64,
    /// The keys of the top directory (anchors and sub-directories), in the order written.
    anchors: Vec<KeyHeader>,
    /// Sub-directories created for anchors at a path (`"a/b/name"`), parents first.
    directories: Vec<SubDirectory>,
    /// The classes described in the StreamerInfo record.
    classes: Vec<StreamerInfo>,
}

/// A sub-directory (`TDirectoryFile`) being written: its key holds its directory record,
/// rewritten at the end with the position of its keys list.
#[derive(Debug, Clone)]
struct SubDirectory {
    /// Its path (`"a/b"`).
    path: String,
    /// Its key in its parent's keys list.
    key: KeyHeader,
    /// The file offset of its parent's key (100 for the top directory).
    seek_parent: u64,
    /// Its own keys (anchors and sub-directories).
    keys: Vec<KeyHeader>,
    uuid: [u8; 16],
}

impl FileWriter<AtomicFile> {
    /// Starts the file at `path`, replacing an existing file only when complete: the
    /// bytes go to a temporary file beside it, renamed over `path` by
    /// [`FileWriter::finish`]; on any error, or if the writer is dropped unfinished, the
    /// temporary file is removed and `path` stays as it was. Writes the file header and
    /// the top directory key (both patched at [`FileWriter::finish`]). Key objects
    /// (anchors, streamer info) are compressed with `compression` when that makes them
    /// smaller, and the setting is recorded in the header as the file's default.
    pub fn create(path: &Path, compression: CompressionSettings) -> Result<FileWriter<AtomicFile>> {
        Self::create_atomic(AtomicFile::create(path, Existing::Replace)?, compression)
    }

    /// Like [`FileWriter::create`], into an [`AtomicFile`] already started (e.g. one
    /// that refuses to replace an existing file).
    pub fn create_atomic(
        out: AtomicFile,
        compression: CompressionSettings,
    ) -> Result<FileWriter<AtomicFile>> {
        let file_name = out
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let output_name = out.path().display().to_string();
        let mut w = FileWriter::new(out, &file_name, compression)?;
        w.output_name = output_name;
        Ok(w)
    }
}

impl<W: FileOutput> FileWriter<W> {
    /// Starts a file in `out` (positioned anywhere; the file starts at offset 0 of `out`)
    /// whose top directory is named `file_name`. See [`FileWriter::create`].
    pub fn new(out: W, file_name: &str, compression: CompressionSettings) -> Result<Self> {
        let mut w = FileWriter {
            out,
            file_name: file_name.to_string(),
            output_name: file_name.to_string(),
            compression,
            datime: datime_now(),
            uuid: new_uuid(),
            pos: 0,
            out_pos: u64::MAX,
            anchors: Vec::new(),
            directories: Vec::new(),
            classes: vec![StreamerInfo::rntuple_anchor()],
        };
        let mut head = w.file_header(0, 0, 0, 0, 0)?;
        head.resize(BEGIN_U32 as usize, 0);
        w.write_at(0, &head)?;
        let top = w.top_directory_bytes(0, 0)?;
        w.write_at(BEGIN, &top)?;
        w.pos = BEGIN + top.len() as u64;
        Ok(w)
    }

    /// The compression settings of the file.
    pub fn compression(&self) -> CompressionSettings {
        self.compression
    }

    /// Describes more classes in the file's StreamerInfo record (those an RNTuple's
    /// streamer fields store, as ROOT's writer adds them); a class already described
    /// (by name and version) is kept once.
    pub fn describe_classes(&mut self, infos: &[StreamerInfo]) {
        for info in infos {
            if !self
                .classes
                .iter()
                .any(|c| c.class_name == info.class_name && c.class_version == info.class_version)
            {
                self.classes.push(info.clone());
            }
        }
    }

    /// The offset at which the next key will be written.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// An I/O failure while writing the output, naming it.
    fn write_error(&self, what: &str, e: std::io::Error) -> Error {
        Error::Io(crate::io::Error::Write {
            what: format!("{} ({what})", self.output_name),
            source: e,
        })
    }

    /// Hands everything written so far to the operating system, so that it survives the
    /// writing process being killed (a checkpoint).
    pub fn checkpoint(&mut self) -> Result<()> {
        self.out.checkpoint()
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        if self.out_pos != offset {
            if let Err(e) = self.out.seek(SeekFrom::Start(offset)) {
                return Err(self.write_error(&format!("seeking to byte offset {offset}"), e));
            }
        }
        if let Err(e) = self.out.write_all(data) {
            return Err(self.write_error(&format!("at byte offset {offset}"), e));
        }
        self.out_pos = offset + data.len() as u64;
        Ok(())
    }

    /// A key header with this writer's conventions (64-bit pointers, cycle 1, the file's
    /// date) for an object of `stored` bytes on disk (`obj_len` uncompressed) at `seek_key`.
    #[allow(clippy::too_many_arguments)]
    fn key(
        &self,
        class_name: &str,
        name: &str,
        title: &str,
        seek_key: u64,
        seek_pdir: u64,
        obj_len: u64,
        stored: u64,
    ) -> Result<KeyHeader> {
        let mut key = KeyHeader {
            nbytes: 0,
            version: KEY_VERSION,
            obj_len: 0,
            datime: self.datime,
            key_len: 0,
            cycle: 1,
            seek_key,
            seek_pdir,
            class_name: class_name.to_string(),
            name: name.to_string(),
            title: title.to_string(),
        };
        let key_len = key.encoded_len();
        key.key_len = u16::try_from(key_len).map_err(|_| {
            Error::InvalidArgument(format!(
                "key header of \"{name}\" ({key_len} bytes) is longer than 65535 bytes"
            ))
        })?;
        let nbytes = stored + key_len as u64;
        key.nbytes = u32::try_from(nbytes)
            .ok()
            .filter(|&n| n <= i32::MAX as u32)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "key \"{name}\" of class {class_name} would take {nbytes} bytes, more than \
                     a key holds (2^31 - 1)"
                ))
            })?;
        key.obj_len = u32::try_from(obj_len).unwrap_or(key.nbytes);
        Ok(key)
    }

    fn rblob_key(&self, seek_key: u64, nbytes: u64, len: u64) -> Result<KeyHeader> {
        self.key(BLOB_CLASS_NAME, "", "", seek_key, BEGIN, len, nbytes)
    }

    /// Length of an RBlob key header (42 bytes).
    fn rblob_key_len() -> u64 {
        (KeyHeader::LARGE_FIXED_LEN + tstring_len(BLOB_CLASS_NAME) + 2) as u64
    }

    /// Writes one key (header and object) at the current position; returns the offset of
    /// the object's first byte.
    fn write_key(&mut self, key: &KeyHeader, object: &[u8]) -> Result<u64> {
        // The header and the object are written one after the other: an object (a
        // cluster's pages) may be large, and is not copied.
        let mut buf = Vec::with_capacity(usize::from(key.key_len));
        key.write(&mut buf)?;
        let data_offset = key.seek_key + buf.len() as u64;
        self.write_at(key.seek_key, &buf)?;
        self.write_at(data_offset, object)?;
        self.pos = data_offset + object.len() as u64;
        Ok(data_offset)
    }

    fn write_rblob_chunk(&mut self, data: &[u8], len: u64) -> Result<u64> {
        let key = self.rblob_key(self.pos, data.len() as u64, len)?;
        self.write_key(&key, data)
    }

    /// Writes `payload` as one RBlob key, or as several when it is longer than
    /// `max_key_size` (0 means no limit) in ROOT's multi-key layout (see
    /// [`super::read_blob`]); returns the file offset of the payload's first byte, which
    /// is what an RNTuple locator stores. As in ROOT, the chunks after the first are
    /// written first, and the first chunk (with the other chunks' offsets) last.
    pub fn write_blob(&mut self, payload: &[u8], max_key_size: u64) -> Result<u64> {
        self.write_blob_with_len(payload, payload.len() as u64, max_key_size)
    }

    /// Like [`FileWriter::write_blob`] for the concatenation of `parts`, without making it
    /// when it fits one key: the parts are written one after the other.
    pub fn write_blob_parts(&mut self, parts: &[&[u8]], max_key_size: u64) -> Result<u64> {
        let total: u64 = parts.iter().map(|p| p.len() as u64).sum();
        if BlobLayout::compute(total, max_key_size)?.n_chunks != 1 {
            return self.write_blob(&parts.concat(), max_key_size);
        }
        let key = self.rblob_key(self.pos, total, total)?;
        let mut buf = Vec::with_capacity(usize::from(key.key_len));
        key.write(&mut buf)?;
        let data_offset = key.seek_key + buf.len() as u64;
        self.write_at(key.seek_key, &buf)?;
        let mut at = data_offset;
        for part in parts {
            self.write_at(at, part)?;
            at += part.len() as u64;
        }
        self.pos = at;
        Ok(data_offset)
    }

    /// Like [`FileWriter::write_blob`], recording `uncompressed_len` as the key's ObjLen
    /// (ROOT records the uncompressed size of the pages or envelope there, which only
    /// matters for tools that show compression ratios). Multi-key chunks record their
    /// own sizes.
    pub fn write_blob_with_len(
        &mut self,
        payload: &[u8],
        uncompressed_len: u64,
        max_key_size: u64,
    ) -> Result<u64> {
        let layout = BlobLayout::compute(payload.len() as u64, max_key_size)?;
        if layout.n_chunks == 1 {
            return self.write_rblob_chunk(payload, uncompressed_len);
        }
        // Several chunks, so max_key_size < payload.len(): the first chunk's data, the
        // chunk size and the chunk count are all below a slice length.
        #[allow(clippy::cast_possible_truncation)]
        let (first_len, step, n_rest) = (
            layout.first_chunk_data as usize,
            max_key_size as usize,
            (layout.n_chunks - 1) as usize,
        );
        let mut offsets = Vec::with_capacity(n_rest);
        for chunk in payload[first_len..].chunks(step) {
            offsets.push(self.write_rblob_chunk(chunk, chunk.len() as u64)?);
        }
        if offsets.len() as u64 != layout.n_chunks - 1 {
            return Err(Error::InvalidArgument(format!(
                "MaxKeySize {max_key_size} is too small to split {} bytes",
                payload.len()
            )));
        }
        let mut first = Vec::with_capacity(step);
        first.extend_from_slice(&payload[..first_len]);
        for off in &offsets {
            first.extend_from_slice(&off.to_le_bytes());
        }
        self.write_rblob_chunk(&first, max_key_size)
    }

    /// The offset the payload of the next [`FileWriter::write_blob`] call will start at,
    /// for a payload of `payload_len` bytes split at `max_key_size` (for callers that
    /// lay out locators before writing).
    pub fn next_blob_payload_offset(&self, payload_len: u64, max_key_size: u64) -> Result<u64> {
        let layout = BlobLayout::compute(payload_len, max_key_size)?;
        let key_len = Self::rblob_key_len();
        let others = payload_len - layout.first_chunk_data;
        // Each chunk after the first has its own key header.
        let chunks_before = (layout.n_chunks - 1) * key_len + others;
        Ok(self.pos + chunks_before + key_len)
    }

    /// Moves the write position forward to `offset`, leaving a hole. The hole is marked
    /// as gap records (a negative Nbytes, as ROOT marks deleted keys) so that tools
    /// walking the file key by key skip it. Meant for tests of files larger than 2 or
    /// 4 GiB without writing gigabytes (on file systems with sparse files).
    pub fn skip_to(&mut self, offset: u64) -> Result<()> {
        if offset < self.pos {
            return Err(Error::InvalidArgument(format!(
                "cannot skip back from byte offset {} to {offset}",
                self.pos
            )));
        }
        let mut remaining = offset - self.pos;
        if (1..4).contains(&remaining) {
            return Err(Error::InvalidArgument(format!(
                "a hole of {remaining} bytes cannot hold a gap record (at least 4 bytes)"
            )));
        }
        let mut at = self.pos;
        while remaining > 0 {
            let mut gap = remaining.min(i32::MAX as u64);
            if (1..4).contains(&(remaining - gap)) {
                gap -= 4;
            }
            // gap <= i32::MAX, so it fits an i32 and its negation too.
            #[allow(clippy::cast_possible_truncation)]
            let record = -(gap as i32);
            self.write_at(at, &record.to_be_bytes())?;
            at += gap;
            remaining -= gap;
        }
        self.pos = offset;
        Ok(())
    }

    /// Adds a `ROOT::RNTuple` anchor key named `name` to the top directory.
    /// `anchor_object` is the anchor's streamed form ([`crate::format::Anchor::to_object`],
    /// 78 bytes); like ROOT, it is compressed with the file's settings when that makes it
    /// smaller. Several anchors of the same name get increasing cycle numbers. A `name`
    /// with a path (`"a/b/name"`) puts the anchor into that sub-directory, creating it
    /// (and its parents) as ROOT's `mkdir` does.
    pub fn write_anchor(&mut self, name: &str, anchor_object: &[u8]) -> Result<()> {
        // "a/b/name": the anchor goes into sub-directory a/b, created as needed.
        let (dir, base) = match name.trim_matches('/').rsplit_once('/') {
            Some((dir, base)) => (dir, base),
            None => ("", name.trim_matches('/')),
        };
        if base.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "\"{name}\" names no RNTuple"
            )));
        }
        let seek_pdir = self.directory(dir)?;
        let stored = compress_key_object(anchor_object, self.compression)?;
        let mut key = self.key(
            ANCHOR_CLASS_NAMES[0],
            base,
            "",
            self.pos,
            seek_pdir,
            anchor_object.len() as u64,
            stored.len() as u64,
        )?;
        let keys = self.keys_of(dir);
        let previous = keys.iter().filter(|k| k.name == base).count();
        key.cycle = u16::try_from(previous + 1)
            .map_err(|_| Error::InvalidArgument(format!("too many anchors named \"{name}\"")))?;
        self.write_key(&key, &stored)?;
        self.keys_of(dir).push(key);
        Ok(())
    }

    /// The keys of the directory at `path` (`""`: the top directory), which exists.
    fn keys_of(&mut self, path: &str) -> &mut Vec<KeyHeader> {
        match self.directories.iter().position(|d| d.path == path) {
            Some(i) => &mut self.directories[i].keys,
            None => &mut self.anchors,
        }
    }

    /// The file offset of the key of directory `path` (`""`: the top directory, at 100),
    /// creating it and its parents as ROOT's `mkdir` does: a `TDirectoryFile` key whose
    /// object is the directory record (completed by [`FileWriter::finish`]).
    fn directory(&mut self, path: &str) -> Result<u64> {
        if path.is_empty() {
            return Ok(BEGIN);
        }
        if let Some(d) = self.directories.iter().find(|d| d.path == path) {
            return Ok(d.key.seek_key);
        }
        let (parent, name) = match path.rsplit_once('/') {
            Some((parent, name)) => (parent, name),
            None => ("", path),
        };
        if name.is_empty() || name == "." || name == ".." {
            return Err(Error::InvalidArgument(format!(
                "directory path \"{path}\" has an empty or relative component"
            )));
        }
        let seek_parent = self.directory(parent)?;
        if self
            .keys_of(parent)
            .iter()
            .any(|k| k.name == name && k.class_name != SUB_DIRECTORY_CLASS)
        {
            return Err(Error::InvalidArgument(format!(
                "\"{path}\" is already the name of an object, not a directory"
            )));
        }
        let key = self.key(
            SUB_DIRECTORY_CLASS,
            name,
            name,
            self.pos,
            seek_parent,
            DirectoryRecord::ENCODED_LEN as u64,
            DirectoryRecord::ENCODED_LEN as u64,
        )?;
        let dir = SubDirectory {
            path: path.to_string(),
            key,
            seek_parent,
            keys: Vec::new(),
            uuid: new_uuid(),
        };
        let record = self.sub_directory_record(&dir, 0, 0)?;
        let key = dir.key.clone();
        self.write_key(&key, &record)?;
        self.keys_of(parent).push(key.clone());
        self.directories.push(dir);
        Ok(key.seek_key)
    }

    /// The directory record of a sub-directory, with its keys list at `seek_keys`.
    fn sub_directory_record(
        &self,
        dir: &SubDirectory,
        seek_keys: u64,
        nbytes_keys: u32,
    ) -> Result<Vec<u8>> {
        let large = seek_keys.max(dir.key.seek_key) > MAX_SMALL_SEEK;
        let record = DirectoryRecord {
            version: DIRECTORY_VERSION
                + if large {
                    DirectoryRecord::LARGE_DIR_VERSION
                } else {
                    0
                },
            ctime: self.datime,
            mtime: self.datime,
            nbytes_keys,
            nbytes_name: u32::from(dir.key.key_len),
            seek_dir: dir.key.seek_key,
            seek_parent: dir.seek_parent,
            seek_keys,
            uuid_version: 1,
            uuid: dir.uuid,
        };
        let mut out = Vec::with_capacity(DirectoryRecord::ENCODED_LEN);
        record.write(&mut out)?;
        out.resize(DirectoryRecord::ENCODED_LEN, 0);
        Ok(out)
    }

    /// Writes the keys list of every sub-directory and completes its record.
    fn finish_directories(&mut self) -> Result<()> {
        for i in 0..self.directories.len() {
            let dir = self.directories[i].clone();
            let seek_keys = self.pos;
            let keys_len: u64 = dir.keys.iter().map(|k| u64::from(k.key_len)).sum();
            let name = dir.key.name.clone();
            let list_key = self.key(
                "",
                &name,
                &name,
                seek_keys,
                dir.key.seek_key,
                4 + keys_len,
                4 + keys_len,
            )?;
            let mut buf = Vec::new();
            write_keys_list(&mut buf, &list_key, &dir.keys)?;
            self.write_at(seek_keys, &buf)?;
            self.pos = seek_keys + buf.len() as u64;
            let nbytes_keys = u32::try_from(buf.len()).map_err(|_| {
                Error::InvalidArgument(format!(
                    "the keys list of directory \"{}\" is too long",
                    dir.path
                ))
            })?;
            let record = self.sub_directory_record(&dir, seek_keys, nbytes_keys)?;
            self.write_at(dir.key.seek_key + u64::from(dir.key.key_len), &record)?;
        }
        Ok(())
    }

    /// Bytes of the file header for the given trailing-record positions; the 64-bit
    /// variant when any of them lies beyond 2 GiB.
    fn file_header(
        &self,
        end: u64,
        seek_free: u64,
        nbytes_free: u32,
        seek_info: u64,
        nbytes_info: u32,
    ) -> Result<Vec<u8>> {
        let large = end.max(seek_free).max(seek_info) > MAX_SMALL_SEEK;
        let header = FileHeader {
            version: ROOT_VERSION_CODE
                + if large {
                    FileHeader::LARGE_FILE_VERSION
                } else {
                    0
                },
            begin: BEGIN_U32,
            end,
            seek_free,
            nbytes_free,
            nfree: 1,
            nbytes_name: self.top_nbytes_name()?,
            units: if large { 8 } else { 4 },
            compress: self.compression.as_u32(),
            seek_info,
            nbytes_info,
            // ROOT's RNTuple writer leaves the header's UUID zero.
            uuid_version: 0,
            uuid: [0; 16],
        };
        let mut out = Vec::with_capacity(BEGIN_U32 as usize);
        header.write(&mut out)?;
        Ok(out)
    }

    /// fNbytesName: the top directory key's header plus the TNamed name and title.
    fn top_nbytes_name(&self) -> Result<u32> {
        let key = self.key("TFile", &self.file_name, "", BEGIN, 0, 0, 0)?;
        let n = usize::from(key.key_len) + tstring_len(&self.file_name) + 1;
        u32::try_from(n).map_err(|_| {
            Error::InvalidArgument(format!(
                "file name of {} bytes: the top directory's name record takes more than 2^32 - 1",
                self.file_name.len()
            ))
        })
    }

    /// The top directory's key and object (TNamed name and title, directory record).
    fn top_directory_bytes(&self, seek_keys: u64, nbytes_keys: u32) -> Result<Vec<u8>> {
        let nbytes_name = self.top_nbytes_name()?;
        let record = DirectoryRecord {
            version: DIRECTORY_VERSION
                + if seek_keys > MAX_SMALL_SEEK {
                    DirectoryRecord::LARGE_DIR_VERSION
                } else {
                    0
                },
            ctime: self.datime,
            mtime: self.datime,
            nbytes_keys,
            nbytes_name,
            seek_dir: BEGIN,
            seek_parent: 0,
            seek_keys,
            uuid_version: 1,
            uuid: self.uuid,
        };
        let obj_len = tstring_len(&self.file_name) + 1 + DirectoryRecord::ENCODED_LEN;
        let key = self.key(
            "TFile",
            &self.file_name,
            "",
            BEGIN,
            0,
            obj_len as u64,
            obj_len as u64,
        )?;
        let mut out = Vec::with_capacity(usize::from(key.key_len) + obj_len);
        key.write(&mut out)?;
        super::cursor::write_tstring(&mut out, &self.file_name);
        super::cursor::write_tstring(&mut out, "");
        record.write(&mut out)?;
        Ok(out)
    }

    /// Writes the keys list, the streamer info and the free segments, then patches the
    /// file header and the top directory record, and completes the output (an
    /// [`AtomicFile`] is synced and renamed over its destination).
    pub fn finish(mut self) -> Result<()> {
        self.finish_in_place()?;
        Ok(())
    }

    /// Like [`FileWriter::finish`], returning the underlying writer.
    pub fn finish_into_inner(mut self) -> Result<W> {
        self.finish_in_place()?;
        Ok(self.out)
    }

    fn finish_in_place(&mut self) -> Result<()> {
        self.finish_directories()?;
        // Keys list.
        let seek_keys = self.pos;
        let anchors_len: u64 = self.anchors.iter().map(|k| u64::from(k.key_len)).sum();
        let list_len = 4 + anchors_len;
        let list_key = self.key(
            "",
            &self.file_name,
            "",
            seek_keys,
            BEGIN,
            list_len,
            list_len,
        )?;
        let mut buf = Vec::new();
        write_keys_list(&mut buf, &list_key, &self.anchors)?;
        self.write_at(seek_keys, &buf)?;
        let nbytes_keys = u32::try_from(buf.len()).map_err(|_| {
            Error::InvalidArgument(format!(
                "the keys list takes {} bytes, more than fNbytesKeys holds (2^32 - 1)",
                buf.len()
            ))
        })?;
        self.pos = seek_keys + buf.len() as u64;

        // Streamer info.
        let seek_info = self.pos;
        let key_len = self
            .key(
                "TList",
                "StreamerInfo",
                "Doubly linked list",
                seek_info,
                BEGIN,
                0,
                0,
            )?
            .key_len;
        let list = streamer_info_list(&self.classes, key_len)?;
        let stored = compress_key_object(&list, self.compression)?;
        let info_key = self.key(
            "TList",
            "StreamerInfo",
            "Doubly linked list",
            seek_info,
            BEGIN,
            list.len() as u64,
            stored.len() as u64,
        )?;
        self.write_key(&info_key, &stored)?;
        let nbytes_info = info_key.nbytes;

        // Free segments: one, from the end of the file to ROOT's conventional limit.
        let seek_free = self.pos;
        let free_key_len = u64::from(
            self.key("", &self.file_name, "", seek_free, BEGIN, 0, 0)?
                .key_len,
        );
        let mut large = false;
        let (mut first, mut last) = (0, 0);
        for _ in 0..2 {
            first = seek_free + free_key_len + if large { 18 } else { 10 };
            last = 2_000_000_000u64.max((first / 1_000_000_000 + 1) * 1_000_000_000);
            large = last > MAX_SMALL_SEEK;
        }
        let mut segment = Vec::with_capacity(18);
        if large {
            segment.extend_from_slice(&(FREE_SEGMENT_VERSION + 1000).to_be_bytes());
            segment.extend_from_slice(&first.to_be_bytes());
            segment.extend_from_slice(&last.to_be_bytes());
        } else {
            segment.extend_from_slice(&FREE_SEGMENT_VERSION.to_be_bytes());
            // Not large: first <= last <= MAX_SMALL_SEEK (2^31 - 1).
            #[allow(clippy::cast_possible_truncation)]
            let (first, last) = (first as u32, last as u32);
            segment.extend_from_slice(&first.to_be_bytes());
            segment.extend_from_slice(&last.to_be_bytes());
        }
        let free_key = self.key(
            "",
            &self.file_name,
            "",
            seek_free,
            BEGIN,
            segment.len() as u64,
            segment.len() as u64,
        )?;
        self.write_key(&free_key, &segment)?;
        let end = self.pos;

        // Patch the header and the top directory.
        let head = self.file_header(end, seek_free, free_key.nbytes, seek_info, nbytes_info)?;
        self.write_at(0, &head)?;
        let top = self.top_directory_bytes(seek_keys, nbytes_keys)?;
        self.write_at(BEGIN, &top)?;
        self.out.complete()
    }
}
