//! Payloads (RNTuple pages and envelopes) that RNTuple stores as one or several RBlob keys.
//!
//! A payload of at most the anchor's MaxKeySize bytes is one RBlob key; its bytes follow
//! the key header. A larger payload is split over several RBlob keys ("chunks"):
//!
//! * The number of chunks `n` starts as `ceil(nbytes / max_key_size)`. The first chunk
//!   also holds `n - 1` chunk offsets of 8 bytes each; if those do not fit into the slack
//!   of the last chunk (`max_key_size - nbytes % max_key_size`, or 0 when that remainder
//!   is 0), one more chunk is added (and one more offset).
//! * The first chunk, at the payload's offset, is exactly `max_key_size` bytes: the first
//!   `max_key_size - 8 * (n - 1)` bytes of the payload, then the file offsets of the
//!   other chunks' data as **little-endian** u64 (RNTuple's own serialization, unlike the
//!   big-endian TFile records).
//! * Each further chunk holds the next `min(max_key_size, remaining)` payload bytes at
//!   its offset (the offset points past that chunk's own key header).
//!
//! ROOT writes the other chunks first and the first chunk last in the file, but the
//! reader only follows the offsets.

use crate::error::{Error, Result};
use crate::io::{ByteRange, ReadAt, ReadRanges};

/// How a payload of `nbytes` is split into chunks for a given MaxKeySize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobLayout {
    /// Number of RBlob keys (1 if the payload fits into one).
    pub n_chunks: u64,
    /// Payload bytes in the first chunk.
    pub first_chunk_data: u64,
    /// Bytes of chunk offsets at the end of the first chunk (`8 * (n_chunks - 1)`).
    pub offsets_len: u64,
}

impl BlobLayout {
    /// The chunking of `nbytes` payload bytes with at most `max_key_size` bytes per key
    /// (0 means no limit).
    pub fn compute(nbytes: u64, max_key_size: u64) -> Result<BlobLayout> {
        if max_key_size == 0 || nbytes <= max_key_size {
            return Ok(BlobLayout {
                n_chunks: 1,
                first_chunk_data: nbytes,
                offsets_len: 0,
            });
        }
        let mut n = nbytes.div_ceil(max_key_size);
        let tail = nbytes % max_key_size;
        let slack = if tail > 0 { max_key_size - tail } else { 0 };
        let mut offsets_len = (n - 1).saturating_mul(8);
        if offsets_len > slack {
            n += 1;
            offsets_len = offsets_len.saturating_add(8);
        }
        if offsets_len > max_key_size {
            return Err(Error::corrupt(
                "multi-key blob",
                format!(
                    "{nbytes} bytes need {n} chunks whose offsets ({offsets_len} bytes) do not \
                     fit into one key of MaxKeySize {max_key_size}"
                ),
            ));
        }
        Ok(BlobLayout {
            n_chunks: n,
            first_chunk_data: max_key_size - offsets_len,
            offsets_len,
        })
    }
}

/// Reads a payload of `nbytes` bytes stored at file offset `offset` (just after its first
/// RBlob key header), following the chunk offsets if the payload is larger than
/// `max_key_size` (the anchor's MaxKeySize; 0 means no limit). See the module
/// documentation for the layout.
pub fn read_blob(
    source: &dyn ReadAt,
    offset: u64,
    nbytes: u64,
    max_key_size: u64,
) -> Result<Vec<u8>> {
    let size = source.size();
    let check = |off: u64, len: u64, what: &str| -> Result<()> {
        match off.checked_add(len) {
            Some(end) if end <= size => Ok(()),
            _ => Err(Error::Truncated {
                what: format!("{what} in {}", source.name()),
                offset: off,
                needed: len,
                available: size.saturating_sub(off),
            }),
        }
    };
    // The payload is somewhere in the file: it cannot be larger than the file.
    if nbytes > size {
        return Err(Error::corrupt(
            format!("blob at byte offset {offset}"),
            format!("size {nbytes} exceeds the file size {size}"),
        ));
    }
    let layout = BlobLayout::compute(nbytes, max_key_size)?;
    if layout.n_chunks == 1 {
        check(offset, nbytes, "blob")?;
        return Ok(source.read_at(offset, nbytes)?);
    }
    check(offset, max_key_size, "first chunk of a multi-key blob")?;
    let first = source.read_at(offset, max_key_size)?;
    let split = usize::try_from(layout.first_chunk_data)
        .map_err(|_| Error::Unsupported("blob chunk larger than the address space".into()))?;
    let (data, offsets) = first.split_at(split.min(first.len()));
    let mut remaining = nbytes - layout.first_chunk_data;
    let mut ranges = Vec::new();
    for (i, raw) in offsets.chunks_exact(8).enumerate() {
        if remaining == 0 {
            break;
        }
        let mut le = [0u8; 8];
        le.copy_from_slice(raw);
        let chunk_offset = u64::from_le_bytes(le);
        let len = remaining.min(max_key_size);
        check(
            chunk_offset,
            len,
            &format!(
                "chunk {} of the multi-key blob at byte offset {offset}",
                i + 1
            ),
        )?;
        ranges.push(ByteRange {
            offset: chunk_offset,
            len,
        });
        remaining -= len;
    }
    if remaining > 0 {
        return Err(Error::corrupt(
            format!("multi-key blob at byte offset {offset}"),
            format!(
                "its chunk offsets cover {} of {nbytes} bytes",
                nbytes - remaining
            ),
        ));
    }
    let mut out = Vec::with_capacity(crate::error::to_usize(
        nbytes,
        &format!("multi-key blob at byte offset {offset}"),
    )?);
    out.extend_from_slice(data);
    for (range, chunk) in ranges.iter().zip(source.read_ranges(&ranges)?) {
        if chunk.len() as u64 != range.len {
            return Err(Error::Truncated {
                what: format!("chunk of the multi-key blob at byte offset {offset}"),
                offset: range.offset,
                needed: range.len,
                available: chunk.len() as u64,
            });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// Reads several payloads as [`read_blob`] does, the ones stored in one key each (the
/// usual case) in one vectored read of the source: opening an RNTuple reads every page
/// list this way, in one request to a remote source instead of one per cluster group.
/// `Err` when the vectored read fails; else each payload's bytes or its own error (a
/// payload past the end of the file, a broken multi-key blob).
pub fn read_blobs(
    source: &dyn ReadAt,
    blobs: &[(u64, u64)],
    max_key_size: u64,
) -> Result<Vec<Result<Vec<u8>>>> {
    let size = source.size();
    let single = |&(offset, nbytes): &(u64, u64)| {
        (max_key_size == 0 || nbytes <= max_key_size)
            && offset.checked_add(nbytes).is_some_and(|end| end <= size)
    };
    let ranges: Vec<ByteRange> = blobs
        .iter()
        .filter(|b| single(b))
        .map(|&(offset, len)| ByteRange { offset, len })
        .collect();
    let mut read = if ranges.is_empty() {
        Vec::new()
    } else {
        source.read_ranges(&ranges)?
    }
    .into_iter();
    Ok(blobs
        .iter()
        .map(|b| {
            if single(b) {
                read.next().ok_or_else(|| Error::Truncated {
                    what: format!("blob at byte offset {} in {}", b.0, source.name()),
                    offset: b.0,
                    needed: b.1,
                    available: 0,
                })
            } else {
                // Multi-key blobs, and the error of a blob past the end, as read_blob
                // gives them.
                read_blob(source, b.0, b.1, max_key_size)
            }
        })
        .collect())
}

/// Splits `payload` into the chunks ROOT writes for a multi-key blob: returns the data of
/// each chunk in payload order, given where each chunk after the first will be written.
/// The first chunk gets the chunk offsets appended. `chunk_offsets` must hold
/// `layout.n_chunks - 1` offsets (the file offsets of the chunks' data).
pub fn split_blob(
    payload: &[u8],
    max_key_size: u64,
    chunk_offsets: &[u64],
) -> Result<Vec<Vec<u8>>> {
    let layout = BlobLayout::compute(payload.len() as u64, max_key_size)?;
    if layout.n_chunks == 1 {
        return Ok(vec![payload.to_vec()]);
    }
    if chunk_offsets.len() as u64 != layout.n_chunks - 1 {
        return Err(Error::InvalidArgument(format!(
            "a blob of {} bytes needs {} chunk offsets, got {}",
            payload.len(),
            layout.n_chunks - 1,
            chunk_offsets.len()
        )));
    }
    // Several chunks: the first one's data is shorter than `payload`.
    #[allow(clippy::cast_possible_truncation)]
    let first_len = layout.first_chunk_data as usize;
    let mut first = payload[..first_len].to_vec();
    for off in chunk_offsets {
        first.extend_from_slice(&off.to_le_bytes());
    }
    let mut chunks = vec![first];
    let step = usize::try_from(max_key_size)
        .map_err(|_| Error::InvalidArgument("MaxKeySize larger than the address space".into()))?;
    for rest in payload[first_len..].chunks(step) {
        chunks.push(rest.to_vec());
    }
    if chunks.len() as u64 != layout.n_chunks {
        return Err(Error::InvalidArgument(format!(
            "MaxKeySize {max_key_size} is too small to split {} bytes",
            payload.len()
        )));
    }
    Ok(chunks)
}
