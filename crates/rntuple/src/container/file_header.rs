//! The TFile header at byte 0 of every ROOT file.

use super::cursor::{seek32, BeReader};
use crate::error::{Error, Result};

/// The header at the start of a ROOT file (TFile). All integers are big-endian.
///
/// Layout (byte offsets; "small" is the 32-bit pointer variant, "large" the 64-bit one
/// used when `version >= 1_000_000`):
///
/// | field | small | large |
/// |---|---|---|
/// | magic `"root"` | 0 (4) | 0 (4) |
/// | fVersion | 4 (4) | 4 (4) |
/// | fBEGIN | 8 (4) | 8 (4) |
/// | fEND | 12 (4) | 12 (8) |
/// | fSeekFree | 16 (4) | 20 (8) |
/// | fNbytesFree | 20 (4) | 28 (4) |
/// | nfree | 24 (4) | 32 (4) |
/// | fNbytesName | 28 (4) | 36 (4) |
/// | fUnits | 32 (1) | 40 (1) |
/// | fCompress | 33 (4) | 41 (4) |
/// | fSeekInfo | 37 (4) | 45 (8) |
/// | fNbytesInfo | 41 (4) | 53 (4) |
/// | UUID version, UUID | 45 (2+16) | 57 (2+16) |
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHeader {
    /// fVersion: the ROOT version that wrote the file (e.g. 64000 for 6.40/00), plus
    /// 1,000,000 if the header uses 64-bit pointers.
    pub version: u32,
    /// fBEGIN: offset of the first key (the top directory's key), usually 100.
    pub begin: u32,
    /// fEND: offset of the first unused byte, i.e. the file's logical size.
    pub end: u64,
    /// fSeekFree: offset of the key holding the list of free segments.
    pub seek_free: u64,
    /// fNbytesFree: size of the free-segments record.
    pub nbytes_free: u32,
    /// nfree: number of free segments.
    pub nfree: u32,
    /// fNbytesName: bytes from fBEGIN to the top directory record (key header plus the
    /// TNamed name and title).
    pub nbytes_name: u32,
    /// fUnits: 4 for 32-bit pointers, 8 for 64-bit ones.
    pub units: u8,
    /// fCompress: the file's default compression setting (algorithm * 100 + level).
    pub compress: u32,
    /// fSeekInfo: offset of the key holding the streamer infos.
    pub seek_info: u64,
    /// fNbytesInfo: size of the streamer-info record.
    pub nbytes_info: u32,
    /// Version of the UUID's streamer.
    pub uuid_version: u16,
    /// The file's UUID.
    pub uuid: [u8; 16],
}

impl FileHeader {
    /// The magic bytes at offset 0.
    pub const MAGIC: [u8; 4] = *b"root";
    /// fVersion at or above this means 64-bit pointers in the header.
    pub const LARGE_FILE_VERSION: u32 = 1_000_000;
    /// Encoded size of the 32-bit variant.
    pub const SMALL_LEN: usize = 63;
    /// Encoded size of the 64-bit variant.
    pub const LARGE_LEN: usize = 75;

    /// Whether the header uses 64-bit pointers.
    pub fn is_large(&self) -> bool {
        self.version >= Self::LARGE_FILE_VERSION
    }

    /// The ROOT version code without the large-file marker (e.g. 64000).
    pub fn root_version(&self) -> u32 {
        self.version % Self::LARGE_FILE_VERSION
    }

    /// The number of bytes [`FileHeader::write`] produces.
    pub fn encoded_len(&self) -> usize {
        if self.is_large() {
            Self::LARGE_LEN
        } else {
            Self::SMALL_LEN
        }
    }

    /// Parses a header from the first bytes of a file (at least [`FileHeader::SMALL_LEN`]
    /// or [`FileHeader::LARGE_LEN`] of them; more are ignored).
    pub fn parse(data: &[u8]) -> Result<FileHeader> {
        const WHAT: &str = "TFile header";
        let mut r = BeReader::new(data, 0, WHAT);
        let magic = r.bytes(4)?;
        if magic != Self::MAGIC {
            // Bad data (Python's FormatError), not a missing RNTuple.
            return Err(Error::corrupt(
                WHAT,
                format!(
                    "not a ROOT file: magic bytes at offset 0 are {magic:02x?}, expected \"root\""
                ),
            ));
        }
        let version = r.non_negative_i32("fVersion")?;
        let large = version >= Self::LARGE_FILE_VERSION;
        let begin = r.non_negative_i32("fBEGIN")?;
        let end = r.seek(large, "fEND")?;
        let seek_free = r.seek(large, "fSeekFree")?;
        let nbytes_free = r.non_negative_i32("fNbytesFree")?;
        let nfree = r.non_negative_i32("nfree")?;
        let nbytes_name = r.non_negative_i32("fNbytesName")?;
        let units = r.u8()?;
        let compress = r.non_negative_i32("fCompress")?;
        let seek_info = r.seek(large, "fSeekInfo")?;
        let nbytes_info = r.non_negative_i32("fNbytesInfo")?;
        let uuid_version = r.u16()?;
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(r.bytes(16)?);
        Ok(FileHeader {
            version,
            begin,
            end,
            seek_free,
            nbytes_free,
            nfree,
            nbytes_name,
            units,
            compress,
            seek_info,
            nbytes_info,
            uuid_version,
            uuid,
        })
    }

    /// Appends the encoded header to `out`; fails if a pointer does not fit a small header.
    pub fn write(&self, out: &mut Vec<u8>) -> Result<()> {
        let large = self.is_large();
        let seek = |out: &mut Vec<u8>, v: u64, field: &str| -> Result<()> {
            if large {
                out.extend_from_slice(&v.to_be_bytes());
            } else {
                out.extend_from_slice(&seek32(v, field)?.to_be_bytes());
            }
            Ok(())
        };
        out.extend_from_slice(&Self::MAGIC);
        out.extend_from_slice(&self.version.to_be_bytes());
        out.extend_from_slice(&self.begin.to_be_bytes());
        seek(out, self.end, "fEND")?;
        seek(out, self.seek_free, "fSeekFree")?;
        out.extend_from_slice(&self.nbytes_free.to_be_bytes());
        out.extend_from_slice(&self.nfree.to_be_bytes());
        out.extend_from_slice(&self.nbytes_name.to_be_bytes());
        out.push(self.units);
        out.extend_from_slice(&self.compress.to_be_bytes());
        seek(out, self.seek_info, "fSeekInfo")?;
        out.extend_from_slice(&self.nbytes_info.to_be_bytes());
        out.extend_from_slice(&self.uuid_version.to_be_bytes());
        out.extend_from_slice(&self.uuid);
        Ok(())
    }
}
