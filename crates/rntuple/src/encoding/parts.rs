//! Encoding one page from the parts its values were appended in, into a buffer the
//! caller reuses: the writer's path. The common column types (plain and split integers,
//! floats and offsets, with their zigzag and delta transforms) are written element by
//! element straight into their place in the page, with no joined copy of the values and
//! no intermediate vector per transform; the others are joined and go through
//! [`encode_page`], byte for byte the same result.

use super::bytes::{zigzag_encode16, zigzag_encode32, zigzag_encode64};
use super::{
    encode_page, index32_overflow, wrong_values, ColumnEncoding, ColumnType, ColumnValues,
};
use crate::error::{Error, Result};

/// Encodes the values of `parts` (consecutive, in order) as one page stored with `enc`
/// into `out`, which is overwritten (its allocation is reused). The result equals
/// `encode_page` of the parts joined.
pub fn encode_parts_into(
    enc: &ColumnEncoding,
    parts: &[ColumnValues],
    out: &mut Vec<u8>,
) -> Result<()> {
    enc.validate()?;
    use ColumnType::*;
    use ColumnValues as V;
    // Each arm maps a part to the u64s whose low bytes are its elements as stored, or to
    // None when the part is not of the variant the column type takes.
    macro_rules! elements {
        ($variant:ident, $x:ident => $stored:expr) => {
            |p| match p {
                V::$variant(v) => Some(v.iter().map(|&$x| $stored)),
                _ => None,
            }
        };
    }
    let mut delta64 = Delta::default();
    let mut delta32 = Delta::default();
    match enc.column_type {
        Byte | Char | UInt8 => {
            put::<1, false, _>(enc, parts, out, elements!(U8, x => u64::from(x)))
        }
        Int8 => put::<1, false, _>(enc, parts, out, elements!(I8, x => u64::from(x as u8))),
        Int16 => put::<2, false, _>(enc, parts, out, elements!(I16, x => u64::from(x as u16))),
        UInt16 => put::<2, false, _>(enc, parts, out, elements!(U16, x => u64::from(x))),
        Int32 => put::<4, false, _>(enc, parts, out, elements!(I32, x => u64::from(x as u32))),
        UInt32 => put::<4, false, _>(enc, parts, out, elements!(U32, x => u64::from(x))),
        Int64 => put::<8, false, _>(enc, parts, out, elements!(I64, x => x as u64)),
        UInt64 => put::<8, false, _>(enc, parts, out, elements!(U64, x => x)),
        Real32 => put::<4, false, _>(enc, parts, out, elements!(F32, x => u64::from(x.to_bits()))),
        Real64 => put::<8, false, _>(enc, parts, out, elements!(F64, x => x.to_bits())),
        Index32 => {
            check_index32(parts)?;
            put::<4, false, _>(enc, parts, out, elements!(Index, x => x))
        }
        Index64 => put::<8, false, _>(enc, parts, out, elements!(Index, x => x)),
        SplitInt16 => put::<2, true, _>(
            enc,
            parts,
            out,
            elements!(I16, x => u64::from(zigzag_encode16(x))),
        ),
        SplitUInt16 => put::<2, true, _>(enc, parts, out, elements!(U16, x => u64::from(x))),
        SplitInt32 => put::<4, true, _>(
            enc,
            parts,
            out,
            elements!(I32, x => u64::from(zigzag_encode32(x))),
        ),
        SplitUInt32 => put::<4, true, _>(enc, parts, out, elements!(U32, x => u64::from(x))),
        SplitInt64 => put::<8, true, _>(enc, parts, out, elements!(I64, x => zigzag_encode64(x))),
        SplitUInt64 => put::<8, true, _>(enc, parts, out, elements!(U64, x => x)),
        SplitReal32 => {
            put::<4, true, _>(enc, parts, out, elements!(F32, x => u64::from(x.to_bits())))
        }
        SplitReal64 => put::<8, true, _>(enc, parts, out, elements!(F64, x => x.to_bits())),
        // Delta encoding in the on-disk width: the page's first element as is, then
        // wrapping differences, across the parts' boundaries.
        SplitIndex32 => {
            check_index32(parts)?;
            put::<4, true, _>(enc, parts, out, |p| match p {
                V::Index(v) => Some(delta32.over(v, 0xFFFF_FFFF)),
                _ => None,
            })
        }
        SplitIndex64 => put::<8, true, _>(enc, parts, out, |p| match p {
            V::Index(v) => Some(delta64.over(v, u64::MAX)),
            _ => None,
        }),
        _ => {
            *out = encode_page(enc, &join(parts)?)?;
            Ok(())
        }
    }
}

/// The previous element of a delta-encoded page, carried from one part to the next.
#[derive(Default)]
struct Delta {
    previous: Option<u64>,
}

impl Delta {
    /// The part's elements as differences to their predecessors (the page's first as
    /// is), wrapping within `mask` (the on-disk width).
    fn over<'a>(&mut self, values: &'a [u64], mask: u64) -> impl Iterator<Item = u64> + 'a {
        let mut previous = self.previous;
        if let Some(&last) = values.last() {
            self.previous = Some(last);
        }
        values.iter().map(move |&x| {
            let d = match previous {
                Some(p) => x.wrapping_sub(p) & mask,
                None => x & mask,
            };
            previous = Some(x);
            d
        })
    }
}

/// Offsets stored in 32 bits must fit them.
fn check_index32(parts: &[ColumnValues]) -> Result<()> {
    for p in parts {
        if let ColumnValues::Index(v) = p {
            if let Some(&x) = v.iter().find(|&&x| x > u64::from(u32::MAX)) {
                return Err(index32_overflow(x));
            }
        }
    }
    Ok(())
}

/// The parts as one `ColumnValues` (for the column types written by [`encode_page`]).
fn join(parts: &[ColumnValues]) -> Result<ColumnValues> {
    let Some((first, rest)) = parts.split_first() else {
        return Err(Error::InvalidArgument("an empty page to encode".into()));
    };
    let mut joined = first.clone();
    joined.reserve(rest.iter().map(ColumnValues::len).sum());
    for p in rest {
        joined.append(p.clone())?;
    }
    Ok(joined)
}

/// Writes every part's elements, `W` bytes each (the low bytes of the u64 that
/// `elements` gives, little-endian), into `out`: byte-split (byte `k` of element `i` at
/// `k * n + i`, `n` the page's element count) when `SPLIT`, else consecutively.
fn put<'a, const W: usize, const SPLIT: bool, I: Iterator<Item = u64>>(
    enc: &ColumnEncoding,
    parts: &'a [ColumnValues],
    out: &mut Vec<u8>,
    mut elements: impl FnMut(&'a ColumnValues) -> Option<I>,
) -> Result<()> {
    let n: usize = parts.iter().map(ColumnValues::len).sum();
    let len = n
        .checked_mul(W)
        .ok_or_else(|| Error::InvalidArgument(format!("a page of {n} elements is too large")))?;
    // Every byte is written below, so only growth needs filling (no clearing first).
    out.resize(len, 0);
    let mut at = 0usize;
    for part in parts {
        let values = elements(part).ok_or_else(|| wrong_values(enc, part))?;
        let count = part.len();
        if SPLIT {
            scatter::<W>(out, n, at, count, values);
        } else {
            let dst = out.get_mut(at * W..(at + count) * W).unwrap_or_default();
            for (slot, v) in dst.chunks_exact_mut(W).zip(values) {
                slot.copy_from_slice(&v.to_le_bytes()[..W]);
            }
        }
        at += count;
    }
    Ok(())
}

/// Writes `count` elements into the `W` byte streams of a split page of `n` elements
/// (`page` holds `n * W` bytes), from element `at` on.
fn scatter<const W: usize>(
    page: &mut [u8],
    n: usize,
    at: usize,
    count: usize,
    values: impl Iterator<Item = u64>,
) {
    let mut streams = page.chunks_exact_mut(n.max(1));
    let mut slots: [&mut [u8]; W] = std::array::from_fn(|_| {
        streams
            .next()
            .and_then(|s| s.get_mut(at..at + count))
            .unwrap_or_default()
    });
    // A stream that came out short (never, for a page of `n * W` bytes) is left alone
    // rather than indexed out of bounds.
    if slots.iter().any(|s| s.len() != count) {
        return;
    }
    for (i, v) in values.take(count).enumerate() {
        let bytes = v.to_le_bytes();
        for (stream, &byte) in slots.iter_mut().zip(&bytes) {
            stream[i] = byte;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encodings() -> Vec<ColumnEncoding> {
        use ColumnType::*;
        [
            (Byte, 8),
            (Char, 8),
            (UInt8, 8),
            (Int8, 8),
            (Int16, 16),
            (UInt16, 16),
            (Int32, 32),
            (UInt32, 32),
            (Int64, 64),
            (UInt64, 64),
            (Real32, 32),
            (Real64, 64),
            (Index32, 32),
            (Index64, 64),
            (SplitInt16, 16),
            (SplitUInt16, 16),
            (SplitInt32, 32),
            (SplitUInt32, 32),
            (SplitInt64, 64),
            (SplitUInt64, 64),
            (SplitReal32, 32),
            (SplitReal64, 64),
            (SplitIndex32, 32),
            (SplitIndex64, 64),
            (SplitReal16, 16),
            (Real16, 16),
            (Bit, 1),
        ]
        .into_iter()
        .map(|(t, bits)| ColumnEncoding::new(t, bits, None).unwrap())
        .collect()
    }

    /// Values of the variant `encode_page` takes for the column type, with negative
    /// numbers, large magnitudes and (for offsets) increasing values that wrap when
    /// differenced in 32 bits.
    fn values(enc: &ColumnEncoding, n: usize) -> ColumnValues {
        use ColumnType::*;
        let i = |k: usize| (k as i64 * 7919 - 40_000) * if k % 3 == 0 { -1 } else { 1 };
        match enc.column_type {
            Byte | Char | UInt8 => ColumnValues::U8((0..n).map(|k| i(k) as u8).collect()),
            Int8 => ColumnValues::I8((0..n).map(|k| i(k) as i8).collect()),
            Int16 | SplitInt16 => ColumnValues::I16((0..n).map(|k| i(k) as i16).collect()),
            UInt16 | SplitUInt16 => ColumnValues::U16((0..n).map(|k| i(k) as u16).collect()),
            Int32 | SplitInt32 => {
                ColumnValues::I32((0..n).map(|k| (i(k) * 40_503) as i32).collect())
            }
            UInt32 | SplitUInt32 => {
                ColumnValues::U32((0..n).map(|k| (i(k) * 40_503) as u32).collect())
            }
            Int64 | SplitInt64 => ColumnValues::I64((0..n).map(|k| i(k) << 30).collect()),
            UInt64 | SplitUInt64 => {
                ColumnValues::U64((0..n).map(|k| (i(k) << 30) as u64).collect())
            }
            Real32 | SplitReal32 | Real16 | SplitReal16 => {
                ColumnValues::F32((0..n).map(|k| i(k) as f32 * 0.37).collect())
            }
            Real64 | SplitReal64 => ColumnValues::F64((0..n).map(|k| i(k) as f64 * 0.37).collect()),
            Index32 | SplitIndex32 => {
                ColumnValues::Index((0..n as u64).map(|k| k * k * 9 + 3_000_000).collect())
            }
            Index64 | SplitIndex64 => {
                ColumnValues::Index((0..n as u64).map(|k| k * k * k * 9_000_001).collect())
            }
            Bit => ColumnValues::Bool((0..n).map(|k| i(k) % 5 == 0).collect()),
            _ => unreachable!("not in encodings()"),
        }
    }

    /// Cut into parts of the given lengths.
    fn cut(values: &ColumnValues, lengths: &[usize]) -> Vec<ColumnValues> {
        let mut at = 0;
        lengths
            .iter()
            .map(|&len| {
                let part = values.slice(at, len).unwrap();
                at += len;
                part
            })
            .collect()
    }

    /// Every column type, cut at every kind of boundary (single elements, empty parts,
    /// uneven lengths), encodes to exactly the bytes of `encode_page` of the whole, and
    /// the reused buffer's earlier (longer) content leaves no trace.
    #[test]
    fn parts_encode_as_the_joined_values() {
        let mut out = vec![0xAB; 1 << 16];
        for enc in encodings() {
            for lengths in [
                vec![1000],
                vec![1, 999],
                vec![0, 500, 0, 1, 499],
                vec![333, 333, 334],
                vec![1],
            ] {
                let whole = values(&enc, lengths.iter().sum());
                let expected = encode_page(&enc, &whole).unwrap();
                encode_parts_into(&enc, &cut(&whole, &lengths), &mut out).unwrap();
                assert_eq!(out, expected, "{:?} cut {lengths:?}", enc.column_type);
            }
        }
    }

    /// Offsets beyond 32 bits are refused for Index32 columns, as by `encode_page`.
    #[test]
    fn index32_refuses_large_offsets() {
        for t in [ColumnType::Index32, ColumnType::SplitIndex32] {
            let enc = ColumnEncoding::new(t, 32, None).unwrap();
            let parts = [
                ColumnValues::Index(vec![1, 2]),
                ColumnValues::Index(vec![1 << 32]),
            ];
            let err = encode_parts_into(&enc, &parts, &mut Vec::new()).unwrap_err();
            assert!(err.to_string().contains("does not fit an Index32"), "{err}");
        }
    }

    /// A part of the wrong variant is an error naming the column type, not bytes.
    #[test]
    fn wrong_variant_is_an_error() {
        let enc = ColumnEncoding::new(ColumnType::SplitReal32, 32, None).unwrap();
        let parts = [ColumnValues::F32(vec![1.0]), ColumnValues::F64(vec![2.0])];
        let err = encode_parts_into(&enc, &parts, &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("SplitReal32"), "{err}");
    }
}
