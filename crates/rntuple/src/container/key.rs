//! TKey headers: the record in front of every object stored in a ROOT file.

use super::cursor::{seek32, tstring_len, write_tstring, BeReader};
use crate::error::{Error, Result};

/// The header of a key (TKey), the record in front of every object in a ROOT file.
/// All integers are big-endian.
///
/// Layout: Nbytes (i32), Version (i16), ObjLen (i32), Datime (u32), KeyLen (i16),
/// Cycle (i16), SeekKey and SeekPdir (32-bit, or 64-bit if Version > 1000), then the
/// TStrings ClassName, Name and Title. The object's bytes follow the header: `Nbytes -
/// KeyLen` bytes on disk, `ObjLen` bytes once decompressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyHeader {
    /// Nbytes: size of the key on disk, header plus (compressed) object.
    pub nbytes: u32,
    /// Version of the key format; above [`KeyHeader::LARGE_KEY_VERSION`] means 64-bit
    /// seek pointers.
    pub version: u16,
    /// ObjLen: size of the object once uncompressed.
    pub obj_len: u32,
    /// Datime: when the key was written, ROOT's packed date/time.
    pub datime: u32,
    /// KeyLen: size of this header, strings included.
    pub key_len: u16,
    /// Cycle: version number of objects of the same name in one directory.
    pub cycle: u16,
    /// SeekKey: offset of this key in the file.
    pub seek_key: u64,
    /// SeekPdir: offset of the directory record (its key) this key belongs to.
    pub seek_pdir: u64,
    /// The stored object's class name, e.g. `ROOT::RNTuple`.
    pub class_name: String,
    /// The object's name.
    pub name: String,
    /// The object's title.
    pub title: String,
}

impl KeyHeader {
    /// A key version above this uses 64-bit seek pointers.
    pub const LARGE_KEY_VERSION: u16 = 1000;
    /// Size of the fixed part with 32-bit pointers.
    pub const SMALL_FIXED_LEN: usize = 26;
    /// Size of the fixed part with 64-bit pointers.
    pub const LARGE_FIXED_LEN: usize = 34;

    /// Whether SeekKey and SeekPdir are 64-bit.
    pub fn is_large(&self) -> bool {
        self.version > Self::LARGE_KEY_VERSION
    }

    /// The number of bytes [`KeyHeader::write`] produces.
    pub fn encoded_len(&self) -> usize {
        let fixed = if self.is_large() {
            Self::LARGE_FIXED_LEN
        } else {
            Self::SMALL_FIXED_LEN
        };
        fixed + tstring_len(&self.class_name) + tstring_len(&self.name) + tstring_len(&self.title)
    }

    /// File offset of the object's bytes (just after the header): SeekKey + KeyLen.
    pub fn data_offset(&self) -> Result<u64> {
        self.seek_key
            .checked_add(u64::from(self.key_len))
            .ok_or_else(|| self.corrupt("SeekKey + KeyLen overflows"))
    }

    /// Bytes of the object on disk: Nbytes - KeyLen.
    pub fn stored_len(&self) -> Result<u64> {
        u64::from(self.nbytes)
            .checked_sub(u64::from(self.key_len))
            .ok_or_else(|| {
                self.corrupt(format!(
                    "Nbytes {} is smaller than KeyLen {}",
                    self.nbytes, self.key_len
                ))
            })
    }

    /// Whether the object is compressed on disk (fewer bytes stored than ObjLen).
    pub fn is_compressed(&self) -> Result<bool> {
        Ok(self.stored_len()? < u64::from(self.obj_len))
    }

    fn corrupt(&self, detail: impl Into<String>) -> Error {
        Error::corrupt(
            format!(
                "key \"{}\" (class {}) at byte offset {}",
                self.name, self.class_name, self.seek_key
            ),
            detail,
        )
    }

    /// Parses a key header from `data`, whose first byte is at file offset `base`.
    /// The header takes [`KeyHeader::key_len`] bytes; fields longer than that are an error.
    pub fn parse(data: &[u8], base: u64) -> Result<KeyHeader> {
        let mut r = BeReader::new(data, base, "key header");
        Self::parse_from(&mut r)
    }

    /// Parses a key header at the reader's position and leaves the reader after it.
    pub(crate) fn parse_from(r: &mut BeReader<'_>) -> Result<KeyHeader> {
        let start = r.pos();
        let start_offset = r.file_offset();
        let nbytes = r.non_negative_i32("Nbytes")?;
        let version = r.u16()?;
        let obj_len = r.non_negative_i32("ObjLen")?;
        let datime = r.u32()?;
        let key_len = r.u16()?;
        let cycle = r.u16()?;
        let large = version > Self::LARGE_KEY_VERSION;
        let seek_key = r.seek(large, "SeekKey")?;
        let seek_pdir = r.seek(large, "SeekPdir")?;
        let class_name = r.tstring()?;
        let name = r.tstring()?;
        let title = r.tstring()?;
        let consumed = r.pos() - start;
        match consumed.cmp(&usize::from(key_len)) {
            std::cmp::Ordering::Greater => {
                return Err(Error::corrupt(
                    format!("key header at byte offset {start_offset}"),
                    format!("KeyLen is {key_len} but the header's fields take {consumed} bytes"),
                ))
            }
            // Tolerate padding after the strings, as ROOT does: the next record starts
            // KeyLen bytes after this one.
            std::cmp::Ordering::Less => {
                r.bytes(usize::from(key_len) - consumed)?;
            }
            std::cmp::Ordering::Equal => {}
        }
        if u64::from(nbytes) < u64::from(key_len) {
            return Err(Error::corrupt(
                format!("key header at byte offset {start_offset}"),
                format!("Nbytes {nbytes} is smaller than KeyLen {key_len}"),
            ));
        }
        Ok(KeyHeader {
            nbytes,
            version,
            obj_len,
            datime,
            key_len,
            cycle,
            seek_key,
            seek_pdir,
            class_name,
            name,
            title,
        })
    }

    /// Appends the encoded header to `out`; fails if a pointer does not fit a small key.
    pub fn write(&self, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(&self.nbytes.to_be_bytes());
        out.extend_from_slice(&self.version.to_be_bytes());
        out.extend_from_slice(&self.obj_len.to_be_bytes());
        out.extend_from_slice(&self.datime.to_be_bytes());
        out.extend_from_slice(&self.key_len.to_be_bytes());
        out.extend_from_slice(&self.cycle.to_be_bytes());
        if self.is_large() {
            out.extend_from_slice(&self.seek_key.to_be_bytes());
            out.extend_from_slice(&self.seek_pdir.to_be_bytes());
        } else {
            out.extend_from_slice(&seek32(self.seek_key, "SeekKey")?.to_be_bytes());
            out.extend_from_slice(&seek32(self.seek_pdir, "SeekPdir")?.to_be_bytes());
        }
        write_tstring(out, &self.class_name);
        write_tstring(out, &self.name);
        write_tstring(out, &self.title);
        Ok(())
    }
}
