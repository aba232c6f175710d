//! An extent file: bytes `[offset, offset + len)` of one version of a remote file, with
//! the checksums that prove them.
//!
//! ```text
//!  0  magic "RNTCACHE"
//!  8  u32 format (1)            12  u32 block size (65536)
//! 16  u64 offset                24  u64 len
//! 32  u128 identity of the version
//! 48  u64 reserved (0)
//! 56  u64 xxh3-64 of bytes [0, 56) followed by the table
//! 64  table: u64 xxh3-64 of each block of the payload (the last block may be shorter)
//! 64 + 8 * blocks: the payload, len bytes
//! ```
//!
//! All numbers little-endian. The file's size follows from `len`, so a truncated file
//! is found before anything is read.

use crate::ByteRange;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

/// The first bytes of every extent file.
pub(super) const MAGIC: [u8; 8] = *b"RNTCACHE";
/// The layout above.
pub(super) const FORMAT: u32 = 1;
/// Payload bytes per checksum.
const BLOCK_BYTES: usize = 64 << 10;
/// [`BLOCK_BYTES`] as stored in the header.
const BLOCK_U32: u32 = 64 << 10;
/// [`BLOCK_BYTES`] as the offsets' type.
pub(super) const BLOCK: u64 = BLOCK_BYTES as u64;
/// Blocks read (and checked) per `pread` of a long range: 512 KiB, so that a chunk is
/// still in the CPU's cache when it is hashed. A warm 16 MiB extent read in one `pread`
/// and then hashed from memory ran at 5.4 GB/s on the 2-core test machine (1 MiB L2),
/// in chunks of 512 KiB at 6.9 GB/s (plain `pread` without hashing: 9.6-11 GB/s).
const CHUNK_BLOCKS: u64 = 8;
/// The fixed part of the header.
const HEADER_BYTES: usize = 64;
/// [`HEADER_BYTES`] as the offsets' type.
pub(super) const HEADER: u64 = HEADER_BYTES as u64;

/// Blocks of a payload of `len` bytes.
pub(super) fn blocks(len: u64) -> u64 {
    len.div_ceil(BLOCK)
}

/// Where the payload of an extent of `len` bytes starts in its file.
pub(super) fn payload_start(len: u64) -> u64 {
    HEADER.saturating_add(blocks(len).saturating_mul(8))
}

/// The size of the file of an extent of `len` bytes.
pub(super) fn file_len(len: u64) -> u64 {
    payload_start(len).saturating_add(len)
}

/// The file name of an extent: `<offset>-<len>`, in decimal.
pub(super) fn file_name(range: ByteRange) -> String {
    format!("{}-{}", range.offset, range.len)
}

/// The extent a file name names: `<offset>-<len>` in decimal without signs or leading
/// zeros, `len > 0` and the end within `u64`.
pub(super) fn parse_name(name: &str) -> Option<ByteRange> {
    let (offset, len) = name.split_once('-')?;
    let number = |s: &str| -> Option<u64> {
        let canonical = !s.is_empty()
            && s.bytes().all(|b| b.is_ascii_digit())
            && (s == "0" || !s.starts_with('0'));
        canonical.then(|| s.parse().ok()).flatten()
    };
    let range = ByteRange {
        offset: number(offset)?,
        len: number(len)?,
    };
    (range.len > 0 && range.offset.checked_add(range.len).is_some()).then_some(range)
}

/// The header and table of an extent holding `data` at `offset` of version `identity`.
pub(super) fn encode_head(identity: u128, offset: u64, data: &[u8]) -> Vec<u8> {
    let len = data.len() as u64;
    let mut head = Vec::with_capacity(HEADER_BYTES + data.len().div_ceil(BLOCK_BYTES) * 8);
    head.extend_from_slice(&MAGIC);
    head.extend_from_slice(&FORMAT.to_le_bytes());
    head.extend_from_slice(&BLOCK_U32.to_le_bytes());
    head.extend_from_slice(&offset.to_le_bytes());
    head.extend_from_slice(&len.to_le_bytes());
    head.extend_from_slice(&identity.to_le_bytes());
    head.extend_from_slice(&[0; 16]);
    for block in data.chunks(BLOCK_BYTES) {
        head.extend_from_slice(&xxh3_64(block).to_le_bytes());
    }
    let sum = head_checksum(&head);
    head[56..64].copy_from_slice(&sum.to_le_bytes());
    head
}

/// The checksum of a header and table: bytes [0, 56) and the table.
fn head_checksum(head: &[u8]) -> u64 {
    let mut hasher = Xxh3::new();
    hasher.update(head.get(..56).unwrap_or_default());
    hasher.update(head.get(HEADER_BYTES..).unwrap_or_default());
    hasher.digest()
}

/// Writes an extent's header, table and payload to `file`.
pub(super) fn write(file: &mut File, identity: u128, offset: u64, data: &[u8]) -> io::Result<()> {
    file.write_all(&encode_head(identity, offset, data))?;
    file.write_all(data)
}

/// Why an extent could not be read.
#[derive(Debug)]
pub(super) enum Fault {
    /// The file is not there (deleted since it was listed).
    Missing,
    /// The file is not what it must be: its size, header, table or a block's checksum.
    Corrupt(String),
    /// Reading failed (EIO, EACCES, ...).
    Unreadable(io::Error),
    /// A link, special file or another user's file in its place: never opened (see
    /// `io/dirfd.rs`; counted and removed where it was found).
    Unsafe,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Missing => f.write_str("missing"),
            Fault::Corrupt(detail) => write!(f, "corrupt: {detail}"),
            Fault::Unreadable(e) => write!(f, "unreadable: {e}"),
            Fault::Unsafe => f.write_str("not a file of the cache (never opened)"),
        }
    }
}

/// A read error: the end of the file early is a truncated (corrupt) file.
fn read_fault(e: io::Error) -> Fault {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => Fault::Corrupt("truncated".to_string()),
        io::ErrorKind::NotFound => Fault::Missing,
        _ => Fault::Unreadable(e),
    }
}

/// A length within one extent as `usize` (extents are written from memory, so their
/// lengths fit; a name that claims more is caught by the size check first).
fn to_usize(v: u64) -> Result<usize, Fault> {
    usize::try_from(v).map_err(|_| Fault::Corrupt(format!("{v} bytes exceed memory")))
}

/// An extent file opened, its header and table checked.
#[derive(Debug)]
pub(super) struct OpenExtent {
    file: File,
    range: ByteRange,
    table: Box<[u64]>,
    payload: u64,
}

impl OpenExtent {
    /// The open `file` that must hold `range` of version `identity`, its size, header
    /// and table checked.
    pub(super) fn from_file(file: File, identity: u128, range: ByteRange) -> Result<Self, Fault> {
        let size = file.metadata().map_err(read_fault)?.len();
        let expected = file_len(range.len);
        if size != expected {
            return Err(Fault::Corrupt(format!("{size} bytes, expected {expected}")));
        }
        let payload = payload_start(range.len);
        let mut head = vec![0u8; to_usize(payload)?];
        file.read_exact_at(&mut head, 0).map_err(read_fault)?;
        let table = decode_head(&head, identity, range).map_err(Fault::Corrupt)?;
        Ok(OpenExtent {
            file,
            range,
            table,
            payload,
        })
    }

    /// The open file.
    pub(super) fn file(&self) -> &File {
        &self.file
    }

    /// Checks block `index` of the payload, whose bytes are `bytes`.
    fn check(&self, index: u64, bytes: &[u8]) -> Result<(), Fault> {
        let stored = usize::try_from(index)
            .ok()
            .and_then(|i| self.table.get(i).copied());
        let computed = xxh3_64(bytes);
        if stored == Some(computed) {
            Ok(())
        } else {
            Err(Fault::Corrupt(format!(
                "block {index} (payload bytes {}..{}) fails its checksum",
                index * BLOCK,
                index * BLOCK + bytes.len() as u64
            )))
        }
    }

    /// The payload bytes of block `index`, relative to the payload: `[start, end)`.
    fn block_bounds(&self, index: u64) -> (u64, u64) {
        let start = index * BLOCK;
        (start, (start + BLOCK).min(self.range.len))
    }

    /// Reads and checks blocks `[first, last]` into `buf` (exactly their bytes), in
    /// reads of [`CHUNK_BLOCKS`] blocks, each checked while its bytes are in the CPU's
    /// cache.
    fn read_blocks(&self, first: u64, last: u64, buf: &mut [u8]) -> Result<(), Fault> {
        let mut at = 0usize;
        let mut chunk_first = first;
        while chunk_first <= last {
            let chunk_last = (chunk_first + CHUNK_BLOCKS - 1).min(last);
            let (start, _) = self.block_bounds(chunk_first);
            let (_, stop) = self.block_bounds(chunk_last);
            let n = to_usize(stop - start)?;
            let chunk = buf
                .get_mut(at..at + n)
                .ok_or_else(|| Fault::Corrupt("blocks past the buffer".to_string()))?;
            self.file
                .read_exact_at(chunk, self.payload + start)
                .map_err(read_fault)?;
            let mut block_at = 0usize;
            for index in chunk_first..=chunk_last {
                let (s, e) = self.block_bounds(index);
                let len = to_usize(e - s)?;
                self.check(index, &chunk[block_at..block_at + len])?;
                block_at += len;
            }
            at += n;
            chunk_first = chunk_last + 1;
        }
        Ok(())
    }

    /// Reads `range` (absolute offsets, inside this extent) into `out`, which holds
    /// exactly its bytes, verifying every block it overlaps. Blocks wholly inside the
    /// range are read straight into `out`; a block the range only partly covers is read
    /// into `scratch` (ranges of at most two blocks: all of them, in one read). On an
    /// error `out` is zeroed: no unverified byte is handed out.
    pub(super) fn read(
        &self,
        range: ByteRange,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<(), Fault> {
        let result = self.read_unchecked_out(range, out, scratch);
        if result.is_err() {
            out.fill(0);
        }
        result
    }

    fn read_unchecked_out(
        &self,
        range: ByteRange,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<(), Fault> {
        let end = range.offset.checked_add(range.len);
        let inside = range.offset >= self.range.offset
            && end.is_some_and(|e| e <= self.range.offset + self.range.len);
        if !inside || range.len == 0 || out.len() as u64 != range.len {
            return Err(Fault::Corrupt(format!(
                "read of {}+{} outside the extent {}+{}",
                range.offset, range.len, self.range.offset, self.range.len
            )));
        }
        let rel_start = range.offset - self.range.offset;
        let rel_end = rel_start + range.len;
        let first = rel_start / BLOCK;
        let last = (rel_end - 1) / BLOCK;
        let head_partial = rel_start != self.block_bounds(first).0;
        let tail_partial = rel_end != self.block_bounds(last).1;
        if last - first < 2 && (head_partial || tail_partial) {
            let (start, _) = self.block_bounds(first);
            let (_, stop) = self.block_bounds(last);
            scratch.resize(to_usize(stop - start)?, 0);
            self.read_blocks(first, last, scratch)?;
            let from = to_usize(rel_start - start)?;
            out.copy_from_slice(&scratch[from..from + out.len()]);
            return Ok(());
        }
        let mut middle = (first, last);
        if head_partial {
            let (start, stop) = self.block_bounds(first);
            scratch.resize(to_usize(stop - start)?, 0);
            self.read_blocks(first, first, scratch)?;
            let from = to_usize(rel_start - start)?;
            let n = to_usize(stop - rel_start)?;
            out[..n].copy_from_slice(&scratch[from..from + n]);
            middle.0 += 1;
        }
        if tail_partial {
            let (start, stop) = self.block_bounds(last);
            scratch.resize(to_usize(stop - start)?, 0);
            self.read_blocks(last, last, scratch)?;
            let n = to_usize(rel_end - start)?;
            let at = out.len() - n;
            out[at..].copy_from_slice(&scratch[..n]);
            middle.1 -= 1;
        }
        if middle.0 <= middle.1 {
            let (start, _) = self.block_bounds(middle.0);
            let (_, stop) = self.block_bounds(middle.1);
            let at = to_usize(start - rel_start)?;
            let n = to_usize(stop - start)?;
            self.read_blocks(middle.0, middle.1, &mut out[at..at + n])?;
        }
        Ok(())
    }

    /// Reads and checks the whole payload, `buf` serving as the buffer (for
    /// `cache verify`: chunks of 64 blocks, so memory stays small).
    pub(super) fn verify_all(&self, buf: &mut Vec<u8>) -> Result<(), Fault> {
        let n = blocks(self.range.len);
        let mut first = 0;
        while first < n {
            let last = (first + 63).min(n - 1);
            let (start, _) = self.block_bounds(first);
            let (_, stop) = self.block_bounds(last);
            buf.resize(to_usize(stop - start)?, 0);
            self.read_blocks(first, last, buf)?;
            first = last + 1;
        }
        Ok(())
    }
}

/// The table of a header and table read from a file that must hold `range` of version
/// `identity`, or what is wrong with it.
pub(super) fn decode_head(
    head: &[u8],
    identity: u128,
    range: ByteRange,
) -> Result<Box<[u64]>, String> {
    let u32_at = |at: usize| {
        head.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
    };
    let u64_at = |at: usize| {
        head.get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
    };
    let n = usize::try_from(blocks(range.len)).map_err(|_| "too many blocks".to_string())?;
    if head.len() != HEADER_BYTES + n * 8 {
        return Err(format!("header of {} bytes", head.len()));
    }
    if head[..8] != MAGIC {
        return Err("not an extent file (bad magic)".to_string());
    }
    if u32_at(8) != Some(FORMAT) {
        return Err(format!("format {:?}, expected {FORMAT}", u32_at(8)));
    }
    if u32_at(12) != Some(BLOCK_U32) {
        return Err(format!("block size {:?}, expected {BLOCK}", u32_at(12)));
    }
    let stored = u64_at(56);
    let computed = head_checksum(head);
    if stored != Some(computed) {
        return Err(format!(
            "header checksum {:#018x}, computed {computed:#018x}",
            stored.unwrap_or_default()
        ));
    }
    let (offset, len) = (u64_at(16), u64_at(24));
    if offset != Some(range.offset) || len != Some(range.len) {
        return Err(format!(
            "holds {}+{}, its name says {}+{}",
            offset.unwrap_or_default(),
            len.unwrap_or_default(),
            range.offset,
            range.len
        ));
    }
    let id = head
        .get(32..48)
        .and_then(|b| b.try_into().ok())
        .map(u128::from_le_bytes);
    if id != Some(identity) {
        return Err(format!(
            "identity {:032x}, its version is {identity:032x}",
            id.unwrap_or_default()
        ));
    }
    Ok(head[HEADER_BYTES..]
        .chunks_exact(8)
        .filter_map(|c| c.try_into().ok().map(u64::from_le_bytes))
        .collect())
}
