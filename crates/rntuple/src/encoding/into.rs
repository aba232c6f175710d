//! Decoding pages straight into (a slice of) their final buffer: one pass from the
//! uncompressed page bytes to the typed elements, without intermediate vectors. The
//! kernels (byte unsplit fused with zigzag/delta/widening, plain little-endian copies,
//! bit unpacking) are written over fixed-size blocks so that the compiler vectorises them.

use super::unsplit::{as_bytes_mut, unsplit_bytes};
use super::{decode_page, ColumnEncoding, ColumnType, ColumnValues};
use crate::error::{Error, Result};
use crate::memory::Pod;

/// Mutable views of (part of) a [`ColumnValues`], one variant per in-memory kind: the
/// destination of [`decode_page_into`].
#[derive(Debug)]
pub enum ValuesMut<'a> {
    /// Booleans.
    Bool(&'a mut [bool]),
    /// Signed bytes.
    I8(&'a mut [i8]),
    /// Unsigned bytes.
    U8(&'a mut [u8]),
    /// 16-bit signed integers.
    I16(&'a mut [i16]),
    /// 16-bit unsigned integers.
    U16(&'a mut [u16]),
    /// 32-bit signed integers.
    I32(&'a mut [i32]),
    /// 32-bit unsigned integers.
    U32(&'a mut [u32]),
    /// 64-bit signed integers.
    I64(&'a mut [i64]),
    /// 64-bit unsigned integers.
    U64(&'a mut [u64]),
    /// Single-precision floats.
    F32(&'a mut [f32]),
    /// Double-precision floats.
    F64(&'a mut [f64]),
    /// Collection end offsets.
    Index(&'a mut [u64]),
    /// Variant switch elements.
    Switch {
        /// Indexes.
        index: &'a mut [u64],
        /// Tags.
        tag: &'a mut [u32],
    },
}

macro_rules! each_mut {
    ($self:expr, $v:ident => $body:expr, $idx:ident, $tag:ident => $sw:expr) => {
        match $self {
            ValuesMut::Bool($v) => $body,
            ValuesMut::I8($v) => $body,
            ValuesMut::U8($v) => $body,
            ValuesMut::I16($v) => $body,
            ValuesMut::U16($v) => $body,
            ValuesMut::I32($v) => $body,
            ValuesMut::U32($v) => $body,
            ValuesMut::I64($v) => $body,
            ValuesMut::U64($v) => $body,
            ValuesMut::F32($v) => $body,
            ValuesMut::F64($v) => $body,
            ValuesMut::Index($v) => $body,
            ValuesMut::Switch {
                index: $idx,
                tag: $tag,
            } => $sw,
        }
    };
}

macro_rules! split_variant {
    ($self:expr, $mid:expr, $($var:ident),*) => {
        match $self {
            $(ValuesMut::$var(v) => {
                let (a, b) = v.split_at_mut($mid);
                (ValuesMut::$var(a), ValuesMut::$var(b))
            })*
            ValuesMut::Switch { index, tag } => {
                let (ia, ib) = index.split_at_mut($mid);
                let (ta, tb) = tag.split_at_mut($mid);
                (
                    ValuesMut::Switch { index: ia, tag: ta },
                    ValuesMut::Switch { index: ib, tag: tb },
                )
            }
        }
    };
}

impl<'a> ValuesMut<'a> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        each_mut!(self, v => v.len(), index, _tag => index.len())
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets every element to zero (`false`, 0, 0.0).
    pub(crate) fn zero(self) {
        each_mut!(self, v => v.fill(Default::default()), index, tag => {
            index.fill(0);
            tag.fill(0);
        })
    }

    /// Splits at `mid` (at most [`ValuesMut::len`], else [`Error::InvalidArgument`]).
    pub fn split_at(self, mid: usize) -> Result<(ValuesMut<'a>, ValuesMut<'a>)> {
        if mid > self.len() {
            return Err(Error::InvalidArgument(format!(
                "split at {mid} of {} values",
                self.len()
            )));
        }
        Ok(split_variant!(
            self, mid, Bool, I8, U8, I16, U16, I32, U32, I64, U64, F32, F64, Index
        ))
    }

    /// Copies `src`'s elements `start..start + self.len()` into `self` (same kind),
    /// straight from `src`'s buffer.
    pub(crate) fn copy_from(self, src: &ColumnValues, start: usize) -> Result<()> {
        let n = self.len();
        let range = start
            .checked_add(n)
            .filter(|&end| end <= src.len())
            .map(|end| start..end)
            .ok_or_else(|| Error::corrupt("page", "page slice out of range"))?;
        use ColumnValues as V;
        use ValuesMut as M;
        match (self, src) {
            (M::Bool(d), V::Bool(s)) => d.copy_from_slice(&s[range]),
            (M::I8(d), V::I8(s)) => d.copy_from_slice(&s[range]),
            (M::U8(d), V::U8(s)) => d.copy_from_slice(&s[range]),
            (M::I16(d), V::I16(s)) => d.copy_from_slice(&s[range]),
            (M::U16(d), V::U16(s)) => d.copy_from_slice(&s[range]),
            (M::I32(d), V::I32(s)) => d.copy_from_slice(&s[range]),
            (M::U32(d), V::U32(s)) => d.copy_from_slice(&s[range]),
            (M::I64(d), V::I64(s)) => d.copy_from_slice(&s[range]),
            (M::U64(d), V::U64(s)) => d.copy_from_slice(&s[range]),
            (M::F32(d), V::F32(s)) => d.copy_from_slice(&s[range]),
            (M::F64(d), V::F64(s)) => d.copy_from_slice(&s[range]),
            (M::Index(d), V::Index(s)) => d.copy_from_slice(&s[range]),
            (M::Switch { index, tag }, V::Switch { index: i, tag: t }) => {
                index.copy_from_slice(&i[range.clone()]);
                tag.copy_from_slice(&t[range]);
            }
            (_, other) => {
                return Err(Error::InvalidArgument(format!(
                    "cannot write {} values into a buffer of another kind",
                    other.kind()
                )))
            }
        }
        Ok(())
    }
}

impl ColumnValues {
    /// A mutable view of all elements.
    pub fn as_values_mut(&mut self) -> ValuesMut<'_> {
        use ColumnValues as V;
        use ValuesMut as M;
        match self {
            V::Bool(v) => M::Bool(v),
            V::I8(v) => M::I8(v),
            V::U8(v) => M::U8(v),
            V::I16(v) => M::I16(v),
            V::U16(v) => M::U16(v),
            V::I32(v) => M::I32(v),
            V::U32(v) => M::U32(v),
            V::I64(v) => M::I64(v),
            V::U64(v) => M::U64(v),
            V::F32(v) => M::F32(v),
            V::F64(v) => M::F64(v),
            V::Index(v) => M::Index(v),
            V::Switch { index, tag } => M::Switch { index, tag },
        }
    }
}

/// Decodes elements `first..first + out.len()` of a page of `n_elements` elements stored
/// with `enc` from its uncompressed bytes into `out`, which must be the kind
/// [`decode_page`] yields for the column type. Same checks and errors as [`decode_page`];
/// pages of the common types take the direct kernels (a part of a page: the whole page
/// into a scratch buffer, then the part copied), the rest go through [`decode_page`] and
/// a copy.
pub fn decode_page_into(
    enc: &ColumnEncoding,
    data: &[u8],
    n_elements: u64,
    first: usize,
    out: ValuesMut<'_>,
) -> Result<()> {
    enc.validate()?;
    let sized = enc.page_bytes(n_elements) == Some(data.len() as u64);
    let whole = first == 0 && out.len() as u64 == n_elements;
    if whole && sized {
        if let Some(out) = decode_direct(enc.column_type, data, out)? {
            // Not a direct kernel's type: decode, then copy.
            let values = decode_page(enc, data, n_elements)?;
            return out.copy_from(&values, 0);
        }
        return Ok(());
    }
    if sized {
        // The element count is backed by the page's real bytes: at most 8 elements a
        // byte, so the scratch is bounded by the input.
        if let Ok(n) = usize::try_from(n_elements) {
            let mut values = ColumnValues::zeros(enc.column_type, n);
            decode_page_into(enc, data, n_elements, 0, values.as_values_mut())?;
            return out.copy_from(&values, first);
        }
    }
    let values = decode_page(enc, data, n_elements)?;
    out.copy_from(&values, first)
}

/// The direct kernels: decodes `data` (exactly the page's bytes for `out.len()`
/// elements) into `out`; gives `out` back when its column type has no direct kernel.
fn decode_direct<'a>(
    column_type: ColumnType,
    data: &[u8],
    out: ValuesMut<'a>,
) -> Result<Option<ValuesMut<'a>>> {
    use ColumnType::*;
    use ValuesMut as M;
    match (column_type, out) {
        (Bit, M::Bool(o)) => unpack_bools(data, o),
        (Byte | Char | UInt8, M::U8(o)) => o.copy_from_slice(data),
        (Int16, M::I16(o)) => plain_copy(data, o, i16::from_le_bytes),
        (UInt16, M::U16(o)) => plain_copy(data, o, u16::from_le_bytes),
        (Int32, M::I32(o)) => plain_copy(data, o, i32::from_le_bytes),
        (UInt32, M::U32(o)) => plain_copy(data, o, u32::from_le_bytes),
        (Int64, M::I64(o)) => plain_copy(data, o, i64::from_le_bytes),
        (UInt64, M::U64(o)) => plain_copy(data, o, u64::from_le_bytes),
        (Real32, M::F32(o)) => plain_copy(data, o, f32::from_le_bytes),
        (Real64, M::F64(o)) => plain_copy(data, o, f64::from_le_bytes),
        (Index64, M::Index(o)) => plain_copy(data, o, u64::from_le_bytes),
        (Index32, M::Index(o)) => plain_into(data, o, |b| u64::from(u32::from_le_bytes(b))),
        (SplitInt16, M::I16(o)) => unsplit_typed::<2, _>(data, o, |c| {
            c.iter_mut().for_each(|x| *x = unzigzag16(*x as u16))
        }),
        (SplitUInt16, M::U16(o)) => unsplit_typed::<2, _>(data, o, |_| ()),
        (SplitInt32, M::I32(o)) => unsplit_typed::<4, _>(data, o, |c| {
            c.iter_mut().for_each(|x| *x = unzigzag32(*x as u32))
        }),
        (SplitUInt32, M::U32(o)) => unsplit_typed::<4, _>(data, o, |_| ()),
        (SplitInt64, M::I64(o)) => unsplit_typed::<8, _>(data, o, |c| {
            c.iter_mut().for_each(|x| *x = unzigzag64(*x as u64))
        }),
        (SplitUInt64, M::U64(o)) => unsplit_typed::<8, _>(data, o, |_| ()),
        (SplitReal32, M::F32(o)) => unsplit_typed::<4, _>(data, o, |_| ()),
        (SplitReal64, M::F64(o)) => unsplit_typed::<8, _>(data, o, |_| ()),
        (SplitIndex32, M::Index(o)) => unsplit_index32(data, o),
        (SplitIndex64, M::Index(o)) => {
            let mut acc = 0u64;
            unsplit_typed::<8, _>(data, o, |c| {
                for x in c.iter_mut() {
                    acc = acc.wrapping_add(*x);
                    *x = acc;
                }
            })
        }
        (_, out) => return Ok(Some(out)),
    }
    Ok(None)
}

#[inline(always)]
fn unzigzag16(u: u16) -> i16 {
    ((u >> 1) as i16) ^ -((u & 1) as i16)
}
#[inline(always)]
fn unzigzag32(u: u32) -> i32 {
    ((u >> 1) as i32) ^ -((u & 1) as i32)
}
#[inline(always)]
fn unzigzag64(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// Elements per block of [`unsplit_typed`]: each block is unsplit, then post-processed
/// while it is still in the L1 cache.
const BLOCK: usize = 2048;

/// Undoes the split (byte transposition) of `out.len()` elements of `W` bytes held in
/// `data` (`W` streams of `out.len()` bytes) block by block, calling `post` on every block
/// of finished (native) elements in order. `data` must hold `W * out.len()` bytes and `T`
/// be `W` bytes wide (else `out` is left as is).
#[inline(always)]
pub(crate) fn unsplit_typed<const W: usize, T: Pod>(
    data: &[u8],
    out: &mut [T],
    mut post: impl FnMut(&mut [T]),
) {
    let n = out.len();
    if std::mem::size_of::<T>() != W || data.len() < n * W {
        return;
    }
    let mut i0 = 0usize;
    for chunk in out.chunks_mut(BLOCK) {
        let m = chunk.len();
        let streams: [&[u8]; W] = std::array::from_fn(|k| &data[k * n + i0..k * n + i0 + m]);
        let bytes = as_bytes_mut(chunk);
        unsplit_bytes::<W>(streams, bytes);
        if cfg!(target_endian = "big") {
            bytes.chunks_exact_mut(W).for_each(|e| e.reverse());
        }
        post(chunk);
        i0 += m;
    }
}

/// SplitIndex32 into 64-bit offsets: unsplit a block into 32-bit deltas, then add them up
/// in 32 bits (as ROOT's 32-bit on-disk type does) while widening.
fn unsplit_index32(data: &[u8], out: &mut [u64]) {
    let n = out.len();
    if data.len() < n * 4 {
        return;
    }
    let mut buf = [0u32; BLOCK];
    let mut acc = 0u32;
    let mut i0 = 0usize;
    for chunk in out.chunks_mut(BLOCK) {
        let m = chunk.len();
        let deltas = &mut buf[..m];
        let streams: [&[u8]; 4] = std::array::from_fn(|k| &data[k * n + i0..k * n + i0 + m]);
        let bytes = as_bytes_mut(deltas);
        unsplit_bytes::<4>(streams, bytes);
        if cfg!(target_endian = "big") {
            bytes.chunks_exact_mut(4).for_each(|e| e.reverse());
        }
        for (o, &d) in chunk.iter_mut().zip(deltas.iter()) {
            acc = acc.wrapping_add(d);
            *o = u64::from(acc);
        }
        i0 += m;
    }
}

/// Plain little-endian elements: a byte copy on little-endian hosts.
#[inline(always)]
fn plain_copy<const W: usize, T: Pod>(data: &[u8], out: &mut [T], f: impl Fn([u8; W]) -> T) {
    let bytes = as_bytes_mut(out);
    if cfg!(target_endian = "little") && data.len() >= bytes.len() {
        bytes.copy_from_slice(&data[..bytes.len()]);
    } else {
        plain_into(data, out, f)
    }
}

/// Reads consecutive little-endian `W`-byte elements of `data` into `out` through `f`.
#[inline(always)]
pub(crate) fn plain_into<const W: usize, T: Copy>(
    data: &[u8],
    out: &mut [T],
    f: impl Fn([u8; W]) -> T,
) {
    for (o, b) in out.iter_mut().zip(data.chunks_exact(W)) {
        let mut a = [0u8; W];
        a.copy_from_slice(b);
        *o = f(a);
    }
}

/// Unpacks `out.len()` LSB-first bits of `data` into booleans.
pub(crate) fn unpack_bools(data: &[u8], out: &mut [bool]) {
    let mut chunks = out.chunks_exact_mut(8);
    for (chunk, &byte) in (&mut chunks).zip(data) {
        for (j, o) in chunk.iter_mut().enumerate() {
            *o = (byte >> j) & 1 != 0;
        }
    }
    let n_full = out.len() / 8;
    let rest = out.len() % 8;
    if rest > 0 {
        let byte = data.get(n_full).copied().unwrap_or(0);
        for (j, o) in out[n_full * 8..].iter_mut().enumerate() {
            *o = (byte >> j) & 1 != 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fixed-width column type: the direct kernels (whole pages) and the partial
    /// path agree with `decode_page` on arbitrary bytes.
    #[test]
    fn direct_kernels_match_decode_page() {
        use ColumnType::*;
        // Every type but the two whose width is a setting of the column.
        let types = ColumnType::ALL
            .into_iter()
            .filter(|t| !matches!(t, Real32Trunc | Real32Quant));
        for t in types {
            let enc = ColumnEncoding::of_type(t);
            for n in [0u64, 1, 7, 33, 100, 5000] {
                let len = enc.page_bytes(n).unwrap_or(0) as usize;
                let data: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
                let want = decode_page(&enc, &data, n).expect("decodes");
                let mut got = ColumnValues::zeros(t, n as usize);
                decode_page_into(&enc, &data, n, 0, got.as_values_mut()).expect("whole");
                // Compared as text: NaN payloads are equal there.
                assert_eq!(format!("{got:?}"), format!("{want:?}"), "{t} n={n}");
                if n > 2 {
                    let mut part = ColumnValues::zeros(t, n as usize - 2);
                    decode_page_into(&enc, &data, n, 1, part.as_values_mut()).expect("part");
                    assert_eq!(
                        format!("{:?}", Some(part)),
                        format!("{:?}", want.slice(1, n as usize - 2)),
                        "{t} n={n}"
                    );
                }
            }
        }
    }
}
