//! Envelopes: type and length preamble, payload, xxh3 checksum.

use super::cursor::Writer;
use crate::error::{Error, Result};
use xxhash_rust::xxh3::xxh3_64;

/// The envelope types of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvelopeType {
    /// The header: the schema.
    Header = 1,
    /// The footer: cluster groups, schema extension.
    Footer = 2,
    /// A page list: cluster summaries and page locations.
    PageList = 3,
}

impl EnvelopeType {
    fn name(self) -> &'static str {
        match self {
            EnvelopeType::Header => "header envelope",
            EnvelopeType::Footer => "footer envelope",
            EnvelopeType::PageList => "page list envelope",
        }
    }
}

/// Checks an uncompressed envelope (type, length, checksum) and returns its payload:
/// the bytes between the 8-byte preamble and the 8-byte checksum. The checksum itself is
/// returned too, as headers are referenced by theirs.
pub fn open_envelope<'a>(
    data: &'a [u8],
    expected: EnvelopeType,
    what: &str,
) -> Result<(&'a [u8], u64)> {
    if data.len() < 16 {
        return Err(Error::Truncated {
            what: what.to_string(),
            offset: 0,
            needed: 16,
            available: data.len() as u64,
        });
    }
    let (body, tail) = data.split_at(data.len() - 8);
    let mut sum = [0u8; 8];
    sum.copy_from_slice(tail);
    let stored = u64::from_le_bytes(sum);
    let computed = xxh3_64(body);
    if stored != computed {
        return Err(Error::ChecksumMismatch {
            what: what.to_string(),
            stored,
            computed,
        });
    }
    let mut head = [0u8; 8];
    head.copy_from_slice(&body[..8]);
    let preamble = u64::from_le_bytes(head);
    let type_id = preamble & 0xffff;
    let length = preamble >> 16;
    if type_id != expected as u64 {
        return Err(Error::corrupt(
            what,
            format!(
                "envelope type is {type_id}, expected {} ({})",
                expected as u64,
                expected.name()
            ),
        ));
    }
    if length != data.len() as u64 {
        return Err(Error::corrupt(
            what,
            format!(
                "envelope states length {length} but {} bytes were read",
                data.len()
            ),
        ));
    }
    Ok((&body[8..], stored))
}

/// Wraps a payload into an envelope of the given type, with preamble and checksum.
pub fn seal_envelope(kind: EnvelopeType, payload: &[u8]) -> Vec<u8> {
    let length = payload.len() as u64 + 16;
    let mut w = Writer::new();
    w.u64((length << 16) | kind as u64);
    w.bytes(payload);
    let sum = xxh3_64(w.as_bytes());
    w.u64(sum);
    w.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_round_trip() {
        let env = seal_envelope(EnvelopeType::Footer, b"hello");
        let (payload, _) = open_envelope(&env, EnvelopeType::Footer, "footer").unwrap();
        assert_eq!(payload, b"hello");
    }

    #[test]
    fn flipped_byte_fails_the_checksum_and_names_the_envelope() {
        let mut env = seal_envelope(EnvelopeType::Header, b"hello");
        env[9] ^= 1;
        let err = open_envelope(&env, EnvelopeType::Header, "header envelope").unwrap_err();
        assert!(
            err.to_string()
                .contains("checksum mismatch in header envelope"),
            "{err}"
        );
    }

    #[test]
    fn wrong_type_is_an_error() {
        let env = seal_envelope(EnvelopeType::Header, b"x");
        assert!(open_envelope(&env, EnvelopeType::PageList, "p").is_err());
    }
}
