//! Directory records (TDirectory / TDirectoryFile) and their keys lists.

use super::cursor::{seek32, BeReader};
use super::key::KeyHeader;
use crate::error::{Error, Result};

/// The streamed form of a directory (the top directory of a TFile, or a sub-directory's
/// object payload). All integers are big-endian.
///
/// Layout: Version (i16; above [`DirectoryRecord::LARGE_DIR_VERSION`] means 64-bit
/// pointers), CTime (u32), MTime (u32), NbytesKeys (i32), NbytesName (i32), SeekDir,
/// SeekParent, SeekKeys (32- or 64-bit), then the UUID (u16 version, 16 bytes) and, in the
/// 32-bit variant, 12 bytes of zero padding that leave room to grow to 64 bits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectoryRecord {
    /// The class version of the streamed directory.
    pub version: u16,
    /// Creation time, ROOT's packed date/time.
    pub ctime: u32,
    /// Modification time, ROOT's packed date/time.
    pub mtime: u32,
    /// Size of the keys-list record at `seek_keys`.
    pub nbytes_keys: u32,
    /// Size of the directory's key header plus its TNamed name and title.
    pub nbytes_name: u32,
    /// Offset of this directory's key.
    pub seek_dir: u64,
    /// Offset of the parent directory's key (0 for the top directory).
    pub seek_parent: u64,
    /// Offset of the keys-list record.
    pub seek_keys: u64,
    /// Version of the UUID's streamer (0 if the record has no UUID).
    pub uuid_version: u16,
    /// The directory's UUID (zeros if the record has none).
    pub uuid: [u8; 16],
}

impl DirectoryRecord {
    /// A version above this uses 64-bit pointers.
    pub const LARGE_DIR_VERSION: u16 = 1000;
    /// Size of the fields up to and including SeekKeys, 32-bit variant.
    pub const SMALL_FIXED_LEN: usize = 30;
    /// Size of the fields up to and including SeekKeys, 64-bit variant.
    pub const LARGE_FIXED_LEN: usize = 42;
    /// Size of the whole record (both variants: the 32-bit one is padded).
    pub const ENCODED_LEN: usize = 60;

    /// Whether the seek pointers are 64-bit.
    pub fn is_large(&self) -> bool {
        self.version > Self::LARGE_DIR_VERSION
    }

    /// Parses a record from `data`, whose first byte is at file offset `base`. The UUID
    /// is read if the data holds it; the padding is not required.
    pub fn parse(data: &[u8], base: u64) -> Result<DirectoryRecord> {
        let mut r = BeReader::new(data, base, "directory record");
        let version = r.u16()?;
        let large = version > Self::LARGE_DIR_VERSION;
        let ctime = r.u32()?;
        let mtime = r.u32()?;
        let nbytes_keys = r.non_negative_i32("NbytesKeys")?;
        let nbytes_name = r.non_negative_i32("NbytesName")?;
        let seek_dir = r.seek(large, "SeekDir")?;
        let seek_parent = r.seek(large, "SeekParent")?;
        let seek_keys = r.seek(large, "SeekKeys")?;
        let mut uuid_version = 0;
        let mut uuid = [0u8; 16];
        if r.remaining() >= 18 {
            uuid_version = r.u16()?;
            uuid.copy_from_slice(r.bytes(16)?);
        }
        Ok(DirectoryRecord {
            version,
            ctime,
            mtime,
            nbytes_keys,
            nbytes_name,
            seek_dir,
            seek_parent,
            seek_keys,
            uuid_version,
            uuid,
        })
    }

    /// Appends the encoded record ([`DirectoryRecord::ENCODED_LEN`] bytes) to `out`.
    pub fn write(&self, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(&self.version.to_be_bytes());
        out.extend_from_slice(&self.ctime.to_be_bytes());
        out.extend_from_slice(&self.mtime.to_be_bytes());
        out.extend_from_slice(&self.nbytes_keys.to_be_bytes());
        out.extend_from_slice(&self.nbytes_name.to_be_bytes());
        let large = self.is_large();
        for (v, field) in [
            (self.seek_dir, "SeekDir"),
            (self.seek_parent, "SeekParent"),
            (self.seek_keys, "SeekKeys"),
        ] {
            if large {
                out.extend_from_slice(&v.to_be_bytes());
            } else {
                out.extend_from_slice(&seek32(v, field)?.to_be_bytes());
            }
        }
        out.extend_from_slice(&self.uuid_version.to_be_bytes());
        out.extend_from_slice(&self.uuid);
        if !large {
            out.extend_from_slice(&[0u8; 12]);
        }
        Ok(())
    }
}

/// Parses a keys-list record: a key header (for the list itself), a big-endian i32 key
/// count, then that many key headers. `data` starts at file offset `base`.
pub fn parse_keys_list(data: &[u8], base: u64) -> Result<(KeyHeader, Vec<KeyHeader>)> {
    let mut r = BeReader::new(data, base, "keys list");
    let header = KeyHeader::parse_from(&mut r)?;
    let at = r.file_offset();
    let n = r.i32()?;
    let n = usize::try_from(n).map_err(|_| {
        Error::corrupt(
            format!("keys list at byte offset {base}"),
            format!("negative key count {n} at byte offset {at}"),
        )
    })?;
    // Every key header takes at least SMALL_FIXED_LEN + 3 bytes: bound the count by the
    // bytes really there before allocating.
    let min_key = KeyHeader::SMALL_FIXED_LEN + 3;
    if n > r.remaining() / min_key {
        return Err(Error::Truncated {
            what: format!("keys list at byte offset {base} ({n} keys)"),
            offset: r.file_offset(),
            needed: (n as u64).saturating_mul(min_key as u64),
            available: r.remaining() as u64,
        });
    }
    let mut keys = Vec::with_capacity(n);
    for _ in 0..n {
        keys.push(KeyHeader::parse_from(&mut r)?);
    }
    Ok((header, keys))
}

/// Appends a keys-list record to `out`: `header`, the key count, then `keys`.
pub fn write_keys_list(out: &mut Vec<u8>, header: &KeyHeader, keys: &[KeyHeader]) -> Result<()> {
    header.write(out)?;
    let n = i32::try_from(keys.len()).map_err(|_| {
        Error::InvalidArgument(format!("{} keys do not fit a keys list", keys.len()))
    })?;
    out.extend_from_slice(&n.to_be_bytes());
    for k in keys {
        k.write(out)?;
    }
    Ok(())
}
