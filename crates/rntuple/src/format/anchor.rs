//! The RNTuple anchor of the ROOT-file embedding (`ROOT::RNTuple`), big-endian.

use super::locator::{EnvelopeLink, Locator};
use crate::error::{Error, Result};
use xxhash_rust::xxh3::xxh3_64;

/// The anchor: format version and the links to header and footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Anchor {
    /// Format version epoch (1 for RNTuple 1.x).
    pub version_epoch: u16,
    /// Format version major.
    pub version_major: u16,
    /// Format version minor.
    pub version_minor: u16,
    /// Format version patch.
    pub version_patch: u16,
    /// File offset of the header envelope.
    pub seek_header: u64,
    /// Compressed size of the header envelope.
    pub nbytes_header: u64,
    /// Uncompressed size of the header envelope.
    pub len_header: u64,
    /// File offset of the footer envelope.
    pub seek_footer: u64,
    /// Compressed size of the footer envelope.
    pub nbytes_footer: u64,
    /// Uncompressed size of the footer envelope.
    pub len_footer: u64,
    /// The largest payload one key holds; larger ones span several keys.
    pub max_key_size: u64,
}

/// Bytes of the anchor's fields (4 × u16 + 7 × u64), without the checksum.
const ANCHOR_FIELDS_LEN: usize = 4 * 2 + 7 * 8;
/// Streamer preamble: byte count (u32 with 0x40000000 set) and class version (u16).
const STREAMER_PREAMBLE_LEN: usize = 6;
const BYTE_COUNT_MASK: u32 = 0x4000_0000;
/// The class version ROOT writes for `ROOT::RNTuple`.
pub const ANCHOR_CLASS_VERSION: u16 = 2;

impl Anchor {
    /// Where the header envelope lies, and its uncompressed length.
    pub fn header_link(&self) -> EnvelopeLink {
        EnvelopeLink {
            length: self.len_header,
            locator: Locator::file(self.nbytes_header, self.seek_header),
        }
    }

    /// Where the footer envelope lies, and its uncompressed length.
    pub fn footer_link(&self) -> EnvelopeLink {
        EnvelopeLink {
            length: self.len_footer,
            locator: Locator::file(self.nbytes_footer, self.seek_footer),
        }
    }

    /// Parses the anchor from the object bytes of its key (streamer preamble, fields,
    /// checksum), verifying the checksum. Fields appended by newer versions are ignored.
    pub fn from_object(object: &[u8], what: &str) -> Result<Anchor> {
        let needed = STREAMER_PREAMBLE_LEN + ANCHOR_FIELDS_LEN + 8;
        if object.len() < needed {
            return Err(Error::Truncated {
                what: what.to_string(),
                offset: 0,
                needed: needed as u64,
                available: object.len() as u64,
            });
        }
        let be16 = |at: usize| u16::from_be_bytes([object[at], object[at + 1]]);
        let be32 = |at: usize| {
            u32::from_be_bytes([object[at], object[at + 1], object[at + 2], object[at + 3]])
        };
        let be64 = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&object[at..at + 8]);
            u64::from_be_bytes(b)
        };
        let byte_count = be32(0);
        if byte_count & BYTE_COUNT_MASK == 0 {
            return Err(Error::corrupt(what, "anchor lacks the streamer byte count"));
        }
        let class_version = be16(4);
        if class_version < ANCHOR_CLASS_VERSION {
            return Err(Error::Unsupported(format!(
                "RNTuple anchor class version {class_version} (pre-release RNTuple format)"
            )));
        }
        let fields_start = STREAMER_PREAMBLE_LEN;
        let f = |i: usize| be64(fields_start + 8 + 8 * i);
        let anchor = Anchor {
            version_epoch: be16(fields_start),
            version_major: be16(fields_start + 2),
            version_minor: be16(fields_start + 4),
            version_patch: be16(fields_start + 6),
            seek_header: f(0),
            nbytes_header: f(1),
            len_header: f(2),
            seek_footer: f(3),
            nbytes_footer: f(4),
            len_footer: f(5),
            max_key_size: f(6),
        };
        let fields = &object[fields_start..fields_start + ANCHOR_FIELDS_LEN];
        let stored = be64(fields_start + ANCHOR_FIELDS_LEN);
        let computed = xxh3_64(fields);
        if stored != computed {
            return Err(Error::ChecksumMismatch {
                what: what.to_string(),
                stored,
                computed,
            });
        }
        if anchor.version_epoch != 1 {
            return Err(Error::Unsupported(format!(
                "RNTuple format epoch {} (this reader reads epoch 1)",
                anchor.version_epoch
            )));
        }
        Ok(anchor)
    }

    /// Serializes the anchor as the object bytes of its key.
    pub fn to_object(&self) -> Vec<u8> {
        let mut fields = Vec::with_capacity(ANCHOR_FIELDS_LEN);
        for v in [
            self.version_epoch,
            self.version_major,
            self.version_minor,
            self.version_patch,
        ] {
            fields.extend_from_slice(&v.to_be_bytes());
        }
        for v in [
            self.seek_header,
            self.nbytes_header,
            self.len_header,
            self.seek_footer,
            self.nbytes_footer,
            self.len_footer,
            self.max_key_size,
        ] {
            fields.extend_from_slice(&v.to_be_bytes());
        }
        let sum = xxh3_64(&fields);
        let mut out = Vec::with_capacity(STREAMER_PREAMBLE_LEN + fields.len() + 8);
        // ROOT's byte count covers class version and fields; the checksum follows outside it.
        // `fields` holds the anchor's fixed members: ANCHOR_FIELDS_LEN (64) bytes.
        #[allow(clippy::cast_possible_truncation)]
        let count = (2 + fields.len()) as u32 | BYTE_COUNT_MASK;
        out.extend_from_slice(&count.to_be_bytes());
        out.extend_from_slice(&ANCHOR_CLASS_VERSION.to_be_bytes());
        out.extend_from_slice(&fields);
        out.extend_from_slice(&sum.to_be_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::test_util::hex;

    /// The anchor object of the conformance file `types.vector.fundamental.root`,
    /// as ROOT 6.40 wrote it (hex from the file).
    const ROOT_ANCHOR_HEX: &str = "4000004200020001000000020000000000000000013000000000000003070000000000000307000000000000070900000000000000a000000000000000a00000000040000000297a04fae45dd088";

    #[test]
    fn parses_root_anchor_and_writes_it_back_identically() {
        let bytes = hex(ROOT_ANCHOR_HEX);
        let a = Anchor::from_object(&bytes, "anchor").unwrap();
        assert_eq!(
            (a.version_epoch, a.version_major, a.version_minor),
            (1, 0, 2)
        );
        assert_eq!(a.seek_header, 0x130);
        assert_eq!(a.nbytes_header, 0x307);
        assert_eq!(a.seek_footer, 0x709);
        assert_eq!(a.len_footer, 0xa0);
        assert_eq!(a.max_key_size, 1 << 30);
        assert_eq!(a.to_object(), bytes);
    }

    #[test]
    fn corrupt_anchor_fails_its_checksum() {
        let mut bytes = hex(ROOT_ANCHOR_HEX);
        bytes[20] ^= 0x10;
        let err = Anchor::from_object(&bytes, "anchor of ntpl").unwrap_err();
        assert!(err
            .to_string()
            .contains("checksum mismatch in anchor of ntpl"));
    }
}
