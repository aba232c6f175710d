//! Envelopes: type and length preamble, payload, xxh3 checksum.

use super::cursor::Writer;
use crate::compression::{compress, decompress, CompressionSettings};
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
    /// The envelope type of a stored type code (the low 16 bits of the preamble).
    pub fn from_code(code: u64) -> Option<EnvelopeType> {
        match code {
            1 => Some(EnvelopeType::Header),
            2 => Some(EnvelopeType::Footer),
            3 => Some(EnvelopeType::PageList),
            _ => None,
        }
    }

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
    seal_with_checksum(kind, payload).0
}

/// The sealed envelope and its checksum.
fn seal_with_checksum(kind: EnvelopeType, payload: &[u8]) -> (Vec<u8>, u64) {
    let length = payload.len() as u64 + 16;
    let mut w = Writer::new();
    w.u64((length << 16) | kind as u64);
    w.bytes(payload);
    let sum = xxh3_64(w.as_bytes());
    w.u64(sum);
    (w.into_bytes(), sum)
}

/// An envelope ready to store: what [`pack_envelope`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedEnvelope {
    /// The bytes to store: the sealed envelope, compressed.
    pub stored: Vec<u8>,
    /// The envelope's uncompressed length, which its envelope link records.
    pub length: u64,
    /// The envelope's checksum (a header is referred to by its checksum).
    pub checksum: u64,
}

/// An envelope as stored in the file: sealed, then compressed with `compression` (ROOT
/// stores it as is when compressing does not make it smaller).
pub fn pack_envelope(
    kind: EnvelopeType,
    payload: &[u8],
    compression: CompressionSettings,
) -> Result<PackedEnvelope> {
    let (envelope, checksum) = seal_with_checksum(kind, payload);
    Ok(PackedEnvelope {
        stored: compress(&envelope, compression)?,
        length: envelope.len() as u64,
        checksum,
    })
}

/// The reverse of [`pack_envelope`]: decompresses `stored` (unless it is `length` bytes
/// already), checks the envelope and returns its payload and checksum. `max_length`
/// bounds the allocation by what the input can plausibly hold.
pub fn unpack_envelope(
    stored: &[u8],
    length: u64,
    max_length: u64,
    kind: EnvelopeType,
    what: &str,
) -> Result<(Vec<u8>, u64)> {
    if length > max_length || length < 16 {
        return Err(Error::corrupt(
            what,
            format!("implausible envelope length {length}"),
        ));
    }
    if stored.len() as u64 == length {
        let (payload, checksum) = open_envelope(stored, kind, what)?;
        return Ok((payload.to_vec(), checksum));
    }
    let len = usize::try_from(length)
        .map_err(|_| Error::corrupt(what, format!("envelope length {length}")))?;
    let bytes = decompress(stored, len, what)?;
    let (payload, checksum) = open_envelope(&bytes, kind, what)?;
    Ok((payload.to_vec(), checksum))
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
    fn packed_envelopes_unpack_compressed_or_not() {
        let payload: Vec<u8> = (0..4000u32).map(|i| (i % 7) as u8).collect();
        for settings in [
            CompressionSettings::DEFAULT_RNTUPLE,
            CompressionSettings::UNCOMPRESSED,
        ] {
            let packed = pack_envelope(EnvelopeType::PageList, &payload, settings).unwrap();
            assert_eq!(packed.length, payload.len() as u64 + 16);
            assert_eq!(
                packed.stored.len() < payload.len(),
                settings.is_compressed()
            );
            let (back, sum) = unpack_envelope(
                &packed.stored,
                packed.length,
                1 << 20,
                EnvelopeType::PageList,
                "p",
            )
            .unwrap();
            assert_eq!(back, payload);
            let sealed = seal_envelope(EnvelopeType::PageList, &payload);
            assert_eq!(sum.to_le_bytes(), sealed[sealed.len() - 8..]);
            assert_eq!(sum, packed.checksum);
        }
        let packed = pack_envelope(
            EnvelopeType::Footer,
            b"abc",
            CompressionSettings::UNCOMPRESSED,
        )
        .unwrap();
        let err = unpack_envelope(
            &packed.stored,
            packed.length,
            8,
            EnvelopeType::Footer,
            "footer",
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("implausible envelope length 19"),
            "{err}"
        );
    }

    #[test]
    fn wrong_type_is_an_error() {
        let env = seal_envelope(EnvelopeType::Header, b"x");
        assert!(open_envelope(&env, EnvelopeType::PageList, "p").is_err());
    }
}
