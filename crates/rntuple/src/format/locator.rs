//! Locators (where a page or envelope lies) and envelope links.

use super::cursor::{Cursor, Writer};
use crate::error::{Error, Result};

/// A byte range in the file: a standard (32-bit size) or large (64-bit size) locator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Locator {
    /// Number of bytes to read (the compressed size of the block).
    pub size: u64,
    /// Byte offset from the start of the file.
    pub offset: u64,
}

/// Type code of the large locator (64-bit size and offset).
const LOCATOR_TYPE_LARGE: u8 = 0x01;

impl Locator {
    /// Reads a locator at the cursor.
    pub fn read(c: &mut Cursor<'_>) -> Result<Locator> {
        let start = c.position();
        let head = c.i32()?;
        if head >= 0 {
            let offset = c.u64()?;
            return Ok(Locator {
                size: head as u64,
                offset,
            });
        }
        // ROOT writes the head of a non-standard locator as the negation of
        // `own size | reserved << 16 | type << 24` (RNTupleSerializer::SerializeLocator).
        let bits = head.unsigned_abs();
        let own_size = (bits & 0xffff) as usize;
        // The type takes the top byte's low 7 bits (the negated value stays below 2^31).
        let locator_type = ((bits >> 24) & 0x7f) as u8;
        if bits > i32::MAX.unsigned_abs() {
            return Err(Error::corrupt(
                c.what(),
                format!(
                    "locator at offset {start} has the head {head}, which negates to no locator"
                ),
            ));
        }
        if own_size < 4 {
            return Err(Error::corrupt(
                c.what(),
                format!("locator at offset {start} states its own size as {own_size}"),
            ));
        }
        let payload_end = start + own_size;
        let locator = match locator_type {
            LOCATOR_TYPE_LARGE => {
                let size = c.u64()?;
                let offset = c.u64()?;
                Locator { size, offset }
            }
            other => {
                return Err(Error::Unsupported(format!(
                    "locator type {other:#x} at offset {start} of {}",
                    c.what()
                )))
            }
        };
        if c.position() > payload_end {
            return Err(Error::corrupt(
                c.what(),
                format!("locator at offset {start} is larger than its stated size {own_size}"),
            ));
        }
        c.seek(payload_end)?;
        Ok(locator)
    }

    /// Writes the locator: standard when the size fits 31 bits, large otherwise.
    pub fn write(&self, w: &mut Writer) {
        if let Ok(size) = i32::try_from(self.size) {
            w.i32(size);
            w.u64(self.offset);
        } else {
            let own_size: i32 = 4 + 16;
            // Negated, as ROOT writes it: -(own size | type << 24).
            w.i32(-(own_size | (i32::from(LOCATOR_TYPE_LARGE) << 24)));
            w.u64(self.size);
            w.u64(self.offset);
        }
    }
}

/// An envelope link: the envelope's uncompressed length and its locator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EnvelopeLink {
    /// Uncompressed length of the envelope.
    pub length: u64,
    /// Where the (possibly compressed) envelope lies.
    pub locator: Locator,
}

impl EnvelopeLink {
    /// Reads an envelope link at the cursor.
    pub fn read(c: &mut Cursor<'_>) -> Result<EnvelopeLink> {
        let length = c.u64()?;
        let locator = Locator::read(c)?;
        Ok(EnvelopeLink { length, locator })
    }

    /// Writes the envelope link.
    pub fn write(&self, w: &mut Writer) {
        w.u64(self.length);
        self.locator.write(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_and_large_locators_round_trip() {
        for loc in [
            Locator {
                size: 100,
                offset: 12345,
            },
            Locator {
                size: 5 << 30,
                offset: 6 << 30,
            },
        ] {
            let mut w = Writer::new();
            loc.write(&mut w);
            let bytes = w.into_bytes();
            let mut c = Cursor::new(&bytes, "locator");
            assert_eq!(Locator::read(&mut c).unwrap(), loc);
            assert_eq!(c.remaining(), 0);
        }
    }

    #[test]
    fn standard_locators_stop_at_31_bits() {
        // 2^31 - 1 bytes is the largest standard size; one more needs a large locator.
        for (size, len) in [(i32::MAX as u64, 12), (1u64 << 31, 20)] {
            let loc = Locator { size, offset: 9 };
            let mut w = Writer::new();
            loc.write(&mut w);
            let bytes = w.into_bytes();
            assert_eq!(bytes.len(), len, "size {size}");
            assert_eq!(Locator::read(&mut Cursor::new(&bytes, "x")).unwrap(), loc);
        }
    }

    #[test]
    fn large_locator_bytes_equal_roots() {
        // ROOT 6.40's RNTupleSerializer::SerializeLocator of 5 GiB at position 7 (a file
        // locator too large for 31 bits), as printed through PyROOT:
        // ec ff ff fe | 00 00 00 40 01 00 00 00 | 07 00 00 00 00 00 00 00.
        // The head is -(20 | 0x01 << 24) = 0xfeffffec.
        let root: [u8; 20] = [
            0xec, 0xff, 0xff, 0xfe, 0x00, 0x00, 0x00, 0x40, 0x01, 0x00, 0x00, 0x00, 0x07, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        ];
        let loc = Locator {
            size: 5 << 30,
            offset: 7,
        };
        let mut w = Writer::new();
        loc.write(&mut w);
        assert_eq!(w.into_bytes(), root);
        let mut c = Cursor::new(&root, "x");
        assert_eq!(Locator::read(&mut c).unwrap(), loc);
        assert_eq!(c.remaining(), 0);
    }

    #[test]
    fn a_head_that_negates_to_no_locator_is_corrupt() {
        let mut w = Writer::new();
        w.i32(i32::MIN);
        w.u64(0);
        let b = w.into_bytes();
        assert!(matches!(
            Locator::read(&mut Cursor::new(&b, "x")),
            Err(Error::Corrupt { .. })
        ));
    }

    #[test]
    fn unknown_locator_type_is_an_error() {
        let mut w = Writer::new();
        w.i32(-((0x05 << 24) | 12));
        w.u64(0);
        let b = w.into_bytes();
        assert!(Locator::read(&mut Cursor::new(&b, "x")).is_err());
    }
}
