//! Pages as stored: the column's elements encoded, compressed in ROOT's chunk format
//! and, when the column has them, followed by an xxh3-64 checksum of those bytes.
//! [`seal_page`] makes them and [`open_page`] checks them; [`unseal_page_into`]
//! decompresses and decodes a checked page. The writer, the reader and the tools that
//! copy pages (recovery, merging) go through these functions only.

use super::page_list::PageInfo;
use crate::compression::{self, claimed_uncompressed_len, compress_into, CompressionSettings};
use crate::encoding::{
    decode_page_into, encode_parts_into, ColumnEncoding, ColumnValues, ValuesMut,
};
use crate::error::{Error, Result};
use std::cell::RefCell;
use xxhash_rust::xxh3::xxh3_64;

/// Bytes of the checksum a page ends with when the column has checksums.
pub const PAGE_CHECKSUM_BYTES: u64 = 8;

/// One sealed page: its stored bytes (the checksum included) and its element count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedPage {
    /// The compressed bytes, followed by the checksum if `has_checksum`.
    pub bytes: Vec<u8>,
    /// The elements it holds.
    pub n_elements: u32,
    /// Whether `bytes` ends with an xxh3-64 checksum.
    pub has_checksum: bool,
}

impl SealedPage {
    /// The page's checksum, if it has one: the key of same-page merging.
    pub fn checksum(&self) -> Option<u64> {
        if self.has_checksum {
            stored_checksum(&self.bytes)
        } else {
            None
        }
    }
}

/// Encodes, compresses and (with `checksum`) checksums `values` as one page.
pub fn seal_page(
    encoding: &ColumnEncoding,
    values: &ColumnValues,
    compression: CompressionSettings,
    checksum: bool,
) -> Result<SealedPage> {
    seal_page_parts(
        encoding,
        std::slice::from_ref(values),
        compression,
        checksum,
    )
}

/// A thread's buffer for the encoded bytes of the page it seals: reused from page to
/// page, so that encoding writes into memory that is already mapped and in cache.
const ENCODED_KEPT_BYTES: usize = 16 << 20;

thread_local! {
    static ENCODED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// [`seal_page`] of the values of `parts` (consecutive, in order) as one page, without
/// joining them first: they are encoded straight into the thread's reused buffer
/// ([`encode_parts_into`]) and compressed straight into the stored bytes, which leave
/// room for the checksum. The same bytes as `seal_page` of the joined values.
pub fn seal_page_parts(
    encoding: &ColumnEncoding,
    parts: &[ColumnValues],
    compression: CompressionSettings,
    checksum: bool,
) -> Result<SealedPage> {
    let elements: usize = parts.iter().map(ColumnValues::len).sum();
    // The page list stores the count as an i32 whose sign is the checksum flag.
    let n_elements = i32::try_from(elements)
        .ok()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "a page of {elements} elements: a page holds at most {} (2^31 - 1)",
                i32::MAX
            ))
        })?;
    ENCODED.with(|cell| {
        // A page sealed while this thread's buffer is lent (never, as sealing does not
        // nest) gets a buffer of its own.
        let mut own = Vec::new();
        let mut lent = cell.try_borrow_mut().ok();
        let raw = lent.as_deref_mut().unwrap_or(&mut own);
        encode_parts_into(encoding, parts, raw)?;
        let sealed = seal_encoded(raw, n_elements, compression, checksum);
        if raw.capacity() > ENCODED_KEPT_BYTES {
            *raw = Vec::new();
        }
        sealed
    })
}

/// The last eight bytes of a stored page, as the checksum they would be.
fn stored_checksum(stored: &[u8]) -> Option<u64> {
    let at = stored.len().checked_sub(8)?;
    stored
        .get(at..)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
}

/// The stored size of the page `page` describes: its locator's size plus the checksum.
pub fn stored_page_len(page: &PageInfo) -> u64 {
    page.locator.size
        + if page.has_checksum {
            PAGE_CHECKSUM_BYTES
        } else {
            0
        }
}

/// Checks a page's stored bytes against what the page list says of it (`page`, of a
/// column encoded as `encoding`): their length, the checksum, and for a compressed page
/// that its chunk headers announce exactly the uncompressed size of its elements.
/// Returns the page's data without the checksum: the bytes [`unseal_page_into`] takes,
/// and those a page copy writes again (with the same checksum).
pub fn open_page<'a>(
    stored: &'a [u8],
    page: &PageInfo,
    encoding: &ColumnEncoding,
) -> Result<&'a [u8]> {
    let offset = page.locator.offset;
    let what = || format!("page at {}", page.locator.describe());
    let expected = stored_page_len(page);
    if stored.len() as u64 != expected {
        return Err(Error::Truncated {
            what: what(),
            offset,
            needed: expected,
            available: stored.len() as u64,
        });
    }
    let n = u64::from(page.n_elements);
    let unzipped = encoding
        .page_bytes(n)
        .ok_or_else(|| Error::corrupt("page list", format!("page of {n} elements is too large")))?;
    let size = usize::try_from(page.locator.size)
        .map_err(|_| Error::corrupt("page list", "page too large for memory"))?;
    let (data, sum) = stored.split_at(size.min(stored.len()));
    if page.has_checksum {
        let stored_sum = stored_checksum(sum).unwrap_or_default();
        let computed = xxh3_64(data);
        if stored_sum != computed {
            return Err(Error::ChecksumMismatch {
                what: what(),
                stored: stored_sum,
                computed,
            });
        }
    }
    if page.locator.size != unzipped {
        let claimed = claimed_uncompressed_len(data);
        if claimed.map(|c| c as u64) != Some(unzipped) {
            return Err(Error::corrupt(
                what(),
                match claimed {
                    Some(c) => {
                        format!("compressed chunks hold {c} bytes, {unzipped} were expected")
                    }
                    None => "malformed compressed chunk headers".to_string(),
                },
            ));
        }
    }
    Ok(data)
}

/// Decodes elements `first..first + out.len()` of an opened page (`data`, as
/// [`open_page`] returns it) into `out`; a compressed page is first decompressed into
/// `scratch`, which grows as needed and is never cleared (decompression overwrites every
/// byte it hands on), so a caller can reuse it across pages.
pub fn unseal_page_into(
    data: &[u8],
    page: &PageInfo,
    encoding: &ColumnEncoding,
    first: usize,
    out: ValuesMut<'_>,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let encoded = page_encoded(data, page, encoding, scratch)?;
    decode_page_into(encoding, encoded, u64::from(page.n_elements), first, out)
}

/// The encoded bytes of an opened page (`data`, as [`open_page`] returns it, of a column
/// encoded as `encoding`): `data` itself when the page is stored uncompressed, else its
/// bytes decompressed into `scratch`, which grows as needed and is never cleared
/// (decompression overwrites every byte it hands on).
pub(crate) fn page_encoded<'a>(
    data: &'a [u8],
    page: &PageInfo,
    encoding: &ColumnEncoding,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8]> {
    let n = u64::from(page.n_elements);
    let unzipped = encoding
        .page_bytes(n)
        .and_then(|u| usize::try_from(u).ok())
        .ok_or_else(|| Error::corrupt("page list", format!("page of {n} elements is too large")))?;
    if data.len() == unzipped {
        return Ok(data);
    }
    if scratch.len() < unzipped {
        scratch.resize(unzipped, 0);
    }
    let buf = &mut scratch[..unzipped];
    compression::decompress_into(data, buf, &format!("page at {}", page.locator.describe()))?;
    Ok(buf)
}

/// Seals an opened page (`data`, as [`open_page`] returns it, of a column encoded as
/// `from`) again as a page of a column encoded as `to`, compressed with `compression`:
/// with the same encoding the encoded bytes are only recompressed, otherwise the values
/// are decoded and encoded again (a split and an unsplit column type of one kind).
pub fn reseal_page(
    data: &[u8],
    page: &PageInfo,
    from: &ColumnEncoding,
    to: &ColumnEncoding,
    compression: CompressionSettings,
    checksum: bool,
) -> Result<SealedPage> {
    let n = usize::try_from(page.n_elements)
        .map_err(|_| Error::corrupt("page list", "page too large for memory"))?;
    if from == to {
        let mut scratch = Vec::new();
        let encoded = page_encoded(data, page, from, &mut scratch)?;
        return seal_encoded(encoded, page.n_elements, compression, checksum);
    }
    let mut values = ColumnValues::zeros(from.column_type, n);
    unseal_page_into(data, page, from, 0, values.as_values_mut(), &mut Vec::new())?;
    seal_page(to, &values, compression, checksum)
}

/// A page of `n` zero values (false, 0, 0.0, empty collections) of a column encoded as
/// `encoding`: what a reader sees for the entries of a merged input that lacks the
/// column. A Real32Quant column whose range excludes 0 stores zero bits (its minimum).
pub fn zero_page(
    encoding: &ColumnEncoding,
    n: u32,
    compression: CompressionSettings,
    checksum: bool,
) -> Result<SealedPage> {
    let len = usize::try_from(n).map_err(|_| Error::InvalidArgument("page too large".into()))?;
    match seal_page(
        encoding,
        &ColumnValues::zeros(encoding.column_type, len),
        compression,
        checksum,
    ) {
        Ok(page) => Ok(page),
        Err(_) => {
            let bytes = encoding
                .page_bytes(u64::from(n))
                .and_then(|b| usize::try_from(b).ok())
                .ok_or_else(|| Error::InvalidArgument(format!("a page of {n} elements")))?;
            seal_encoded(&vec![0u8; bytes], n, compression, checksum)
        }
    }
}

/// A sealed page of the `encoded` bytes of `n_elements`: compressed straight into the
/// stored bytes, which leave room for the checksum appended when `checksum`. Exactly
/// sized: sealed pages wait in memory until their run is written, and compression is
/// given room for as much as the input.
fn seal_encoded(
    encoded: &[u8],
    n_elements: u32,
    compression: CompressionSettings,
    checksum: bool,
) -> Result<SealedPage> {
    let checksum_bytes = if checksum {
        std::mem::size_of::<u64>()
    } else {
        0
    };
    let mut bytes = Vec::with_capacity(encoded.len() + checksum_bytes);
    compress_into(encoded, compression, &mut bytes)?;
    if checksum {
        let sum = xxh3_64(&bytes);
        bytes.extend_from_slice(&sum.to_le_bytes());
    }
    bytes.shrink_to_fit();
    Ok(SealedPage {
        bytes,
        n_elements,
        has_checksum: checksum,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compression::{compress, Algorithm};
    use crate::encoding::ColumnType;
    use crate::format::Locator;

    fn info(page: &SealedPage, offset: u64) -> PageInfo {
        PageInfo {
            n_elements: page.n_elements,
            has_checksum: page.has_checksum,
            locator: Locator::file(
                page.bytes.len() as u64 - if page.has_checksum { 8 } else { 0 },
                offset,
            ),
        }
    }

    fn encoding() -> ColumnEncoding {
        ColumnEncoding::new(ColumnType::SplitReal64, 64, None).unwrap()
    }

    /// A page sealed from parts is the joined values encoded (`encode_page`), compressed
    /// (`compress`) and followed by the xxh3-64 of those bytes, for every algorithm, with
    /// and without checksum; a smaller page sealed after a larger one on the same thread
    /// (its reused encoding buffer) is unaffected by the larger one.
    #[test]
    fn parts_seal_as_the_joined_values_encoded_compressed_and_summed() {
        use crate::encoding::encode_page;
        let enc = ColumnEncoding::new(ColumnType::SplitIndex64, 64, None).unwrap();
        for n in [5000u64, 700] {
            let whole: Vec<u64> = (0..n).map(|i| i * i / 7 + 3).collect();
            let parts = [
                ColumnValues::Index(whole[..10].to_vec()),
                ColumnValues::Index(whole[10..500].to_vec()),
                ColumnValues::Index(whole[500..].to_vec()),
            ];
            let raw = encode_page(&enc, &ColumnValues::Index(whole.clone())).unwrap();
            for alg in [
                Algorithm::Zstd,
                Algorithm::Zlib,
                Algorithm::Lz4,
                Algorithm::Lzma,
            ] {
                let settings = CompressionSettings::new(alg, 5);
                for checksum in [true, false] {
                    let sealed = seal_page_parts(&enc, &parts, settings, checksum).unwrap();
                    let mut expected = compress(&raw, settings).unwrap();
                    if checksum {
                        let sum = xxh3_64(&expected);
                        expected.extend_from_slice(&sum.to_le_bytes());
                    }
                    assert_eq!(sealed.bytes, expected, "{alg} checksum {checksum} n {n}");
                    assert_eq!(sealed.n_elements, n as u32);
                    assert_eq!(sealed.has_checksum, checksum);
                }
            }
        }
    }

    #[test]
    fn sealed_pages_open_and_decode_to_their_values() {
        let values: Vec<f64> = (0..1000).map(|i| f64::from(i) * 0.5).collect();
        let column = ColumnValues::F64(values.clone());
        for (zstd, checksum) in [(true, true), (true, false), (false, true), (false, false)] {
            let settings = if zstd {
                CompressionSettings::new(Algorithm::Zstd, 5)
            } else {
                CompressionSettings::UNCOMPRESSED
            };
            let sealed = seal_page(&encoding(), &column, settings, checksum).unwrap();
            assert_eq!(sealed.n_elements, 1000);
            assert_eq!(sealed.checksum().is_some(), checksum);
            let page = info(&sealed, 100);
            let data = open_page(&sealed.bytes, &page, &encoding()).unwrap();
            let mut out = ColumnValues::zeros(ColumnType::SplitReal64, 10);
            let mut scratch = Vec::new();
            unseal_page_into(
                data,
                &page,
                &encoding(),
                990,
                out.as_values_mut(),
                &mut scratch,
            )
            .unwrap();
            assert_eq!(out, ColumnValues::F64(values[990..].to_vec()));
        }
    }

    #[test]
    fn a_flipped_byte_fails_the_checksum_and_names_the_page() {
        let column = ColumnValues::F64(vec![1.0; 64]);
        let settings = CompressionSettings::new(Algorithm::Zstd, 1);
        let mut sealed = seal_page(&encoding(), &column, settings, true).unwrap();
        sealed.bytes[3] ^= 0x10;
        let page = info(&sealed, 4096);
        let err = open_page(&sealed.bytes, &page, &encoding()).unwrap_err();
        assert!(
            err.to_string()
                .contains("checksum mismatch in page at byte offset 4096"),
            "{err}"
        );
        let short = open_page(&sealed.bytes[1..], &page, &encoding()).unwrap_err();
        assert!(
            matches!(short, Error::Truncated { needed, .. } if needed == sealed.bytes.len() as u64)
        );
    }

    #[test]
    fn chunks_announcing_another_size_are_corrupt() {
        let column = ColumnValues::F64(vec![2.0; 64]);
        let settings = CompressionSettings::new(Algorithm::Zstd, 1);
        let sealed = seal_page(&encoding(), &column, settings, false).unwrap();
        // The page list claims 65 elements: the chunks hold 64 * 8 bytes, not 65 * 8.
        let mut page = info(&sealed, 0);
        page.n_elements = 65;
        let err = open_page(&sealed.bytes, &page, &encoding()).unwrap_err();
        assert!(
            err.to_string()
                .contains("hold 512 bytes, 520 were expected"),
            "{err}"
        );
    }

    /// Opens `sealed` as a page at offset 0 and decodes all its values.
    fn decode_all(sealed: &SealedPage, enc: &ColumnEncoding) -> ColumnValues {
        let page = info(sealed, 0);
        let data = open_page(&sealed.bytes, &page, enc).unwrap();
        let mut out = ColumnValues::zeros(enc.column_type, sealed.n_elements as usize);
        unseal_page_into(data, &page, enc, 0, out.as_values_mut(), &mut Vec::new()).unwrap();
        out
    }

    #[test]
    fn resealing_recompresses_or_reencodes_to_the_same_values() {
        let values = ColumnValues::I32((0..5000).map(|i| (i * 7919) % 1001 - 500).collect());
        let split = ColumnEncoding::of_type(ColumnType::SplitInt32);
        let plain = ColumnEncoding::of_type(ColumnType::Int32);
        let zstd = CompressionSettings::new(Algorithm::Zstd, 5);
        let lz4 = CompressionSettings::new(Algorithm::Lz4, 4);
        let source = seal_page(&split, &values, zstd, true).unwrap();
        let page = info(&source, 0);
        let data = open_page(&source.bytes, &page, &split).unwrap();
        // Recompressed: the encoded bytes are those lz4 makes of the same page.
        let recompressed = reseal_page(data, &page, &split, &split, lz4, true).unwrap();
        assert_eq!(recompressed, seal_page(&split, &values, lz4, true).unwrap());
        // Re-encoded to the unsplit type, uncompressed: the values stay.
        let uncompressed = CompressionSettings::UNCOMPRESSED;
        let plain_page = reseal_page(data, &page, &split, &plain, uncompressed, false).unwrap();
        assert_eq!(plain_page.bytes.len(), 5000 * 4);
        assert_eq!(decode_all(&plain_page, &plain), values);
    }

    #[test]
    fn zero_pages_read_as_zeros() {
        let zstd = CompressionSettings::new(Algorithm::Zstd, 5);
        let index = ColumnEncoding::of_type(ColumnType::SplitIndex64);
        let page = zero_page(&index, 300, zstd, true).unwrap();
        assert_eq!(decode_all(&page, &index), ColumnValues::Index(vec![0; 300]));
        // A quantized column whose range excludes 0 stores zero bits: its minimum.
        let quant = ColumnEncoding::new(ColumnType::Real32Quant, 8, Some((1.0, 2.0))).unwrap();
        let page = zero_page(&quant, 10, zstd, false).unwrap();
        assert_eq!(decode_all(&page, &quant), ColumnValues::F64(vec![1.0; 10]));
    }
}
