//! Locators (where a page or envelope lies) and envelope links.
//!
//! A locator's first 32 bits are a signed head: a standard locator's is its size (0 to
//! 2^31 - 1), followed by the 64-bit file offset. Any other locator's head is the
//! *negation* of `own size | reserved << 16 | type << 24` (ROOT's
//! `RNTupleSerializer::SerializeLocator`), followed by its payload:
//!
//! | type | payload |
//! |---|---|
//! | 0x01 large file locator | u64 size, u64 offset |
//! | 0x02 object locator (`kTypeObject64`, formerly `kTypeDAOS`) | u32 size (or u64 when it does not fit), u64 location |
//! | others | unknown to us: read (its type and reserved byte named in `info` and `verify`), its pages refused |
//!
//! The reserved byte is kept as read and written back (DAOS's "caged" pages set it).

use super::cursor::{Cursor, Writer};
use crate::error::{Error, Result};

/// How a [`Locator`] says where its bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LocatorKind {
    /// A byte range of the file: [`Locator::offset`] is the file offset (a standard
    /// locator, or a large one, 0x01, when the size needs more than 31 bits or the
    /// reserved byte is set).
    #[default]
    File,
    /// An object of an object store (type 0x02, ROOT's `kTypeObject64`): `location` is
    /// the object's number in its layout (S3: the object id; DAOS: the page id or
    /// cluster group). [`Locator::offset`] is then the object's address in the reader's
    /// byte space of objects, [`object_address`].
    Object64 {
        /// The object's number, as stored.
        location: u64,
    },
    /// A locator type we do not know: its metadata reads, its bytes cannot be found.
    Unknown {
        /// The type code (0x03 to 0x7f).
        type_code: u8,
        /// The locator's size in bytes, head included, as it states.
        own_size: u16,
    },
}

/// Type code of the large file locator (64-bit size and offset).
const LOCATOR_TYPE_LARGE: u8 = 0x01;
/// Type code of the 64-bit object locator (ROOT's `kTypeObject64`, `kTypeDAOS` in 6.40).
const LOCATOR_TYPE_OBJECT64: u8 = 0x02;

/// Bits of an object's address that give the byte within the object: objects are at
/// most 64 GiB apart in the byte space a reader addresses them in ([`object_address`]).
pub const OBJECT_ADDRESS_BITS: u32 = 36;

/// The address of byte 0 of object `location` in the byte space of a store's objects
/// (object `n` at `n << 36`), or `None` for a location too large to address (2^28 and
/// more objects).
pub fn object_address(location: u64) -> Option<u64> {
    (location < 1 << (64 - OBJECT_ADDRESS_BITS)).then_some(location << OBJECT_ADDRESS_BITS)
}

/// Where a page or envelope lies, and how many bytes it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Locator {
    /// Number of bytes to read (the compressed size of the block; a page's without its
    /// checksum).
    pub size: u64,
    /// Where the bytes start in the storage's byte space: the file offset, or the
    /// [`object_address`] of an object locator's object (0 for an unknown type).
    pub offset: u64,
    /// The locator's type and what only it says.
    pub kind: LocatorKind,
    /// The reserved byte of a non-standard locator (0 for a standard one), kept as read.
    pub reserved: u8,
}

impl Locator {
    /// A byte range of a file: `size` bytes at `offset`.
    pub fn file(size: u64, offset: u64) -> Locator {
        Locator {
            size,
            offset,
            ..Locator::default()
        }
    }

    /// Object `location` of an object store, `size` bytes (written as type 0x02).
    pub fn object(size: u64, location: u64) -> Locator {
        Locator {
            size,
            offset: object_address(location).unwrap_or(u64::MAX),
            kind: LocatorKind::Object64 { location },
            reserved: 0,
        }
    }

    /// The number the locator's storage knows it by: the file offset, the object's
    /// location; `None` for an unknown type.
    pub fn position(&self) -> Option<u64> {
        match self.kind {
            LocatorKind::File => Some(self.offset),
            LocatorKind::Object64 { location } => Some(location),
            LocatorKind::Unknown { .. } => None,
        }
    }

    /// The locator's type code as stored (0x00 standard, 0x01 large, 0x02 object, ...).
    pub fn type_code(&self) -> u8 {
        match self.kind {
            LocatorKind::File if self.is_standard() => 0x00,
            LocatorKind::File => LOCATOR_TYPE_LARGE,
            LocatorKind::Object64 { .. } => LOCATOR_TYPE_OBJECT64,
            LocatorKind::Unknown { type_code, .. } => type_code,
        }
    }

    /// A short description for messages and listings: `byte offset 1234`, `object 7`,
    /// `locator type 0x05 (reserved 0x00)`.
    pub fn describe(&self) -> String {
        match self.kind {
            LocatorKind::File => format!("byte offset {}", self.offset),
            LocatorKind::Object64 { location } => format!("object {location}"),
            LocatorKind::Unknown { type_code, .. } => {
                format!(
                    "locator type {type_code:#04x} (reserved {:#04x})",
                    self.reserved
                )
            }
        }
    }

    /// Whether the locator is written in the standard form (a file range of at most
    /// 2^31 - 1 bytes, nothing reserved).
    fn is_standard(&self) -> bool {
        self.kind == LocatorKind::File && self.reserved == 0 && i32::try_from(self.size).is_ok()
    }

    /// Reads a locator at the cursor.
    pub fn read(c: &mut Cursor<'_>) -> Result<Locator> {
        let start = c.position();
        let head = c.i32()?;
        if head >= 0 {
            let offset = c.u64()?;
            return Ok(Locator::file(head as u64, offset));
        }
        let Some(bits) = head.checked_neg() else {
            return Err(Error::corrupt(
                c.what(),
                format!(
                    "locator at offset {start} has the head {head}, which negates to no locator"
                ),
            ));
        };
        // bits = own size | reserved << 16 | type << 24, below 2^31.
        let own_size = (bits & 0xffff) as u16;
        let reserved = ((bits >> 16) & 0xff) as u8;
        let type_code = ((bits >> 24) & 0x7f) as u8;
        let what = c.what();
        let corrupt = |detail: String| Error::corrupt(what, detail);
        if own_size < 4 {
            return Err(corrupt(format!(
                "locator at offset {start} states its own size as {own_size}"
            )));
        }
        let payload_end = start + usize::from(own_size);
        let wrong_size = |expected: &str| {
            corrupt(format!(
                "locator of type {type_code:#04x} at offset {start} states its own size as \
                 {own_size} bytes, where it takes {expected}"
            ))
        };
        let locator = match type_code {
            LOCATOR_TYPE_LARGE => {
                if own_size < 20 {
                    return Err(wrong_size("20"));
                }
                let size = c.u64()?;
                let offset = c.u64()?;
                Locator {
                    reserved,
                    ..Locator::file(size, offset)
                }
            }
            LOCATOR_TYPE_OBJECT64 => {
                let size = match own_size {
                    16 => u64::from(c.u32()?),
                    20 => c.u64()?,
                    _ => return Err(wrong_size("16 (32-bit size) or 20 (64-bit size)")),
                };
                let location = c.u64()?;
                Locator {
                    reserved,
                    ..Locator::object(size, location)
                }
            }
            _ => Locator {
                size: 0,
                offset: 0,
                kind: LocatorKind::Unknown {
                    type_code,
                    own_size,
                },
                reserved,
            },
        };
        if c.position() > payload_end {
            return Err(corrupt(format!(
                "locator at offset {start} is larger than its stated size {own_size}"
            )));
        }
        c.seek(payload_end)?;
        Ok(locator)
    }

    /// Writes the locator: a file range in the standard form when it can be, large
    /// otherwise; an object locator with a 32-bit size when it fits, 64-bit otherwise.
    /// (An unknown type, which no sink produces, is written as its head and zeros.)
    pub fn write(&self, w: &mut Writer) {
        // Negated, as ROOT writes it: -(own size | reserved << 16 | type << 24).
        let head = |w: &mut Writer, own_size: u16, type_code: u8| {
            let bits = i32::from(own_size)
                | (i32::from(self.reserved) << 16)
                | (i32::from(type_code & 0x7f) << 24);
            w.i32(-bits);
        };
        match self.kind {
            LocatorKind::File => match (self.reserved, i32::try_from(self.size)) {
                (0, Ok(size)) => {
                    w.i32(size);
                    w.u64(self.offset);
                }
                _ => {
                    head(w, 20, LOCATOR_TYPE_LARGE);
                    w.u64(self.size);
                    w.u64(self.offset);
                }
            },
            LocatorKind::Object64 { location } => {
                match u32::try_from(self.size) {
                    Ok(size) => {
                        head(w, 16, LOCATOR_TYPE_OBJECT64);
                        w.u32(size);
                    }
                    Err(_) => {
                        head(w, 20, LOCATOR_TYPE_OBJECT64);
                        w.u64(self.size);
                    }
                }
                w.u64(location);
            }
            LocatorKind::Unknown {
                type_code,
                own_size,
            } => {
                let own_size = own_size.max(4);
                head(w, own_size, type_code);
                w.bytes(&vec![0; usize::from(own_size - 4)]);
            }
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

    /// The byte sources' object space splits addresses where the format does.
    #[test]
    fn object_addresses_split_where_the_object_space_does() {
        assert_eq!(OBJECT_ADDRESS_BITS, rntuple_io::OBJECT_BITS);
    }

    #[test]
    fn standard_and_large_locators_round_trip() {
        for loc in [Locator::file(100, 12345), Locator::file(5 << 30, 6 << 30)] {
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
            let loc = Locator::file(size, 9);
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
        let loc = Locator::file(5 << 30, 7);
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

    /// The bytes of `loc` as written.
    fn bytes_of(loc: &Locator) -> Vec<u8> {
        let mut w = Writer::new();
        loc.write(&mut w);
        w.into_bytes()
    }

    #[test]
    fn object_locator_bytes_equal_roots() {
        // ROOT 6.40's SerializeLocator of kTypeDAOS (0x02) locators, from the reference
        // (object-stores.md): 100 B at location 7; reserved 1; 8 GiB (64-bit size).
        let small = [
            0xf0, 0xff, 0xff, 0xfd, 0x64, 0, 0, 0, 0x07, 0, 0, 0, 0, 0, 0, 0,
        ];
        let loc = Locator::object(100, 7);
        assert_eq!(bytes_of(&loc), small);
        let read = Locator::read(&mut Cursor::new(&small, "x")).unwrap();
        assert_eq!(read, loc);
        assert_eq!(read.kind, LocatorKind::Object64 { location: 7 });
        assert_eq!(read.offset, 7 << OBJECT_ADDRESS_BITS);

        let caged = Locator {
            reserved: 1,
            ..Locator::object(100, 7)
        };
        let caged_bytes = bytes_of(&caged);
        assert_eq!(&caged_bytes[..4], &[0xf0, 0xff, 0xfe, 0xfd]);
        assert_eq!(
            Locator::read(&mut Cursor::new(&caged_bytes, "x")).unwrap(),
            caged
        );

        let large = Locator::object(8 << 30, 3);
        let large_bytes = bytes_of(&large);
        assert_eq!(large_bytes.len(), 20);
        assert_eq!(&large_bytes[..4], &[0xec, 0xff, 0xff, 0xfd]);
        assert_eq!(&large_bytes[4..12], &(8u64 << 30).to_le_bytes());
        assert_eq!(&large_bytes[12..], &3u64.to_le_bytes());
        assert_eq!(
            Locator::read(&mut Cursor::new(&large_bytes, "x")).unwrap(),
            large
        );
    }

    #[test]
    fn object_sizes_switch_to_64_bits_past_u32() {
        for (size, len) in [(u64::from(u32::MAX), 16), (1u64 << 32, 20)] {
            let loc = Locator::object(size, 1);
            let bytes = bytes_of(&loc);
            assert_eq!(bytes.len(), len, "size {size}");
            assert_eq!(Locator::read(&mut Cursor::new(&bytes, "x")).unwrap(), loc);
        }
    }

    #[test]
    fn the_reserved_byte_of_a_file_locator_is_kept() {
        // A small range with a reserved byte needs the large form to keep it.
        let loc = Locator {
            reserved: 0x5a,
            ..Locator::file(10, 99)
        };
        let bytes = bytes_of(&loc);
        assert_eq!(bytes.len(), 20);
        // -(20 | 0x5a << 16 | 1 << 24) = 0xfea5ffec.
        assert_eq!(&bytes[..4], &0xfea5_ffecu32.to_le_bytes());
        assert_eq!(Locator::read(&mut Cursor::new(&bytes, "x")).unwrap(), loc);
    }

    #[test]
    fn an_object_locator_of_another_size_is_corrupt() {
        let mut w = Writer::new();
        w.i32(-((0x02 << 24) | 24));
        w.bytes(&[0; 20]);
        let b = w.into_bytes();
        let err = Locator::read(&mut Cursor::new(&b, "x")).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("own size as 24"), "{err}");
    }

    #[test]
    fn an_unknown_locator_type_is_read_and_skipped() {
        // Type 0x05, reserved 0x07, own size 12 (8 payload bytes), then a u32 after it.
        let mut w = Writer::new();
        w.i32(-((0x05 << 24) | (0x07 << 16) | 12));
        w.u64(0xdead_beef);
        w.u32(42);
        let b = w.into_bytes();
        let mut c = Cursor::new(&b, "x");
        let loc = Locator::read(&mut c).unwrap();
        assert_eq!(
            loc.kind,
            LocatorKind::Unknown {
                type_code: 0x05,
                own_size: 12
            }
        );
        assert_eq!(loc.reserved, 0x07);
        assert_eq!(loc.type_code(), 0x05);
        assert_eq!(loc.position(), None);
        assert_eq!(loc.describe(), "locator type 0x05 (reserved 0x07)");
        assert_eq!(c.u32().unwrap(), 42);
        // Written back, it takes its stated size.
        assert_eq!(bytes_of(&loc).len(), 12);
    }

    #[test]
    fn object_addresses_stop_at_2_to_the_28_objects() {
        assert_eq!(object_address(1), Some(1 << 36));
        assert_eq!(object_address((1 << 28) - 1), Some(((1 << 28) - 1) << 36));
        assert_eq!(object_address(1 << 28), None);
        assert_eq!(Locator::object(1, 1 << 28).offset, u64::MAX);
    }
}
