//! Big-endian reading and writing of the TFile's basic types: integers and TStrings.

use crate::error::{Error, Result};

/// Reads big-endian values from a byte slice that starts at file offset `base`; every
/// error names the structure being decoded and the file offset where it failed.
#[derive(Debug, Clone)]
pub(crate) struct BeReader<'a> {
    data: &'a [u8],
    pos: usize,
    base: u64,
    what: &'a str,
}

impl<'a> BeReader<'a> {
    /// A reader over `data`, whose first byte sits at file offset `base`.
    pub(crate) fn new(data: &'a [u8], base: u64, what: &'a str) -> Self {
        BeReader {
            data,
            pos: 0,
            base,
            what,
        }
    }

    /// Bytes consumed so far.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Moves to byte `pos` of the data (back, or ahead to the end at most).
    pub(crate) fn set_pos(&mut self, pos: usize) -> Result<()> {
        if pos > self.data.len() {
            return Err(Error::Truncated {
                what: self.what.to_string(),
                offset: self.base.saturating_add(pos as u64),
                needed: (pos - self.pos.min(pos)) as u64,
                available: self.remaining() as u64,
            });
        }
        self.pos = pos;
        Ok(())
    }

    /// The bytes not consumed yet.
    pub(crate) fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }

    /// Bytes left.
    pub(crate) fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The file offset of the next byte.
    pub(crate) fn file_offset(&self) -> u64 {
        self.base.saturating_add(self.pos as u64)
    }

    /// The next `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(Error::Truncated {
                what: self.what.to_string(),
                offset: self.file_offset(),
                needed: n as u64,
                available: self.remaining() as u64,
            });
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    /// One byte.
    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    /// A big-endian `u16`.
    pub(crate) fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    /// A big-endian `u32`.
    pub(crate) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    /// A big-endian `i32`.
    pub(crate) fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    /// A big-endian `u64`.
    pub(crate) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// A big-endian `i32` that must not be negative, named `field` in errors.
    pub(crate) fn non_negative_i32(&mut self, field: &str) -> Result<u32> {
        let at = self.file_offset();
        let v = self.i32()?;
        u32::try_from(v).map_err(|_| {
            Error::corrupt(
                self.what.to_string(),
                format!("{field} is negative ({v}) at byte offset {at}"),
            )
        })
    }

    /// A seek pointer: 64-bit if `large`, else 32-bit (a negative 32-bit value is corrupt).
    pub(crate) fn seek(&mut self, large: bool, field: &str) -> Result<u64> {
        if large {
            let at = self.file_offset();
            let v = self.u64()?;
            if v > i64::MAX as u64 {
                return Err(Error::corrupt(
                    self.what.to_string(),
                    format!("{field} is negative at byte offset {at}"),
                ));
            }
            Ok(v)
        } else {
            Ok(u64::from(self.non_negative_i32(field)?))
        }
    }

    /// A ROOT TString: a 1-byte length, or 255 followed by a big-endian 4-byte length;
    /// then that many bytes (decoded as UTF-8, invalid sequences replaced).
    pub(crate) fn tstring(&mut self) -> Result<String> {
        Ok(String::from_utf8_lossy(self.tstring_bytes()?).into_owned())
    }

    /// The bytes of a ROOT TString (the layout of [`tstring`](Self::tstring)), as stored.
    pub(crate) fn tstring_bytes(&mut self) -> Result<&'a [u8]> {
        let short = self.u8()?;
        let len = if short == 255 {
            self.u32()? as usize
        } else {
            usize::from(short)
        };
        self.bytes(len)
    }
}

/// Appends a ROOT TString (see [`BeReader::tstring`]) to `out`.
pub(crate) fn write_tstring(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    match u8::try_from(bytes.len()) {
        Ok(n) if n < 255 => out.push(n),
        _ => {
            out.push(255);
            // Strings longer than 4 GiB cannot be represented; they are cut.
            let n = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
    let n = bytes.len().min(u32::MAX as usize);
    out.extend_from_slice(&bytes[..n]);
}

/// The number of bytes [`write_tstring`] writes for `s`.
pub(crate) fn tstring_len(s: &str) -> usize {
    let n = s.len().min(u32::MAX as usize);
    if n < 255 {
        1 + n
    } else {
        5 + n
    }
}

/// Converts a 64-bit seek pointer to 32 bits for a small record, or reports it.
pub(crate) fn seek32(value: u64, field: &str) -> Result<u32> {
    i32::try_from(value).map(|v| v as u32).map_err(|_| {
        Error::InvalidArgument(format!(
            "{field} {value} does not fit a 32-bit seek pointer"
        ))
    })
}
