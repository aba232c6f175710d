//! Column element codecs: between the bytes of an (uncompressed) page and typed values in
//! memory, for every column type of the specification (0x00-0x1D).
//!
//! * plain types: consecutive little-endian elements;
//! * split types: byte-transposed (all first bytes, then all second bytes, ...), plus zigzag
//!   for signed integers and delta for index columns (the first element is stored as is,
//!   the others as the difference to their predecessor; every page starts afresh);
//! * Bit: booleans bit-packed LSB-first;
//! * Real16: IEEE-754 binary16, widened exactly to `f32` (written rounding to nearest even);
//! * Real32Trunc with `b` bits: the top `b` bits of the float32 bit pattern, bit-packed
//!   (ROOT truncates when writing, no rounding; reading fills the low bits with zeros);
//! * Real32Quant with `b` bits and range `[min, max]`: `b`-bit unsigned integers `q`,
//!   bit-packed. ROOT reads, in double precision, `e = q * ((max - min) / (2^b - 1)) + min`
//!   (multiply, then add, each rounded; no fused multiply-add), then `e = min(e, max)`;
//!   double fields get `e`, float fields `(float) e`. It writes
//!   `q = (u32)(0.5 + (x - min) * ((2^b - 1) / (max - min)))`, refusing values outside the range;
//! * bit packing (Bit, Real32Trunc, Real32Quant): element `i` occupies bits
//!   `[i * b, (i + 1) * b)` of a little-endian, LSB-first bit stream (ROOT fills 64-bit
//!   words from their least significant bit and stores them little-endian, which is the same);
//! * Switch: 12 bytes per element, a little-endian u64 index then a u32 tag.
//!
//! Pages decode to [`ColumnValues`], one variant per in-memory element kind.

mod bytes;
mod column_type;
mod into;
mod parts;
mod real;
pub(crate) mod unsplit;

pub use column_type::ColumnType;
pub use into::{decode_page_into, ValuesMut};
pub use parts::encode_parts_into;
pub(crate) use real::f64_to_f32;

use bytes::{
    pack_bits, read_plain, read_split, unpack_bits, write_plain, write_split, zigzag_decode16,
    zigzag_decode32, zigzag_decode64, zigzag_encode16, zigzag_encode32, zigzag_encode64,
};

use crate::error::{Error, Result};

/// How a column's elements are stored: its type, bits on storage and (for Real32Quant)
/// value range, as the column record states them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColumnEncoding {
    /// The on-disk column type.
    pub column_type: ColumnType,
    /// Bits per element on storage (the type's fixed width, or 10-31 for Real32Trunc and
    /// 1-32 for Real32Quant).
    pub bits_on_storage: u16,
    /// The inclusive value range `(min, max)`; required for Real32Quant.
    pub value_range: Option<(f64, f64)>,
}

impl ColumnEncoding {
    /// The encoding of a fixed-width column type, with its default bits on storage.
    pub fn of_type(column_type: ColumnType) -> Self {
        ColumnEncoding {
            column_type,
            bits_on_storage: column_type.default_bits(),
            value_range: None,
        }
    }

    /// A validated encoding (see [`ColumnEncoding::validate`]).
    pub fn new(
        column_type: ColumnType,
        bits_on_storage: u16,
        value_range: Option<(f64, f64)>,
    ) -> Result<Self> {
        let enc = ColumnEncoding {
            column_type,
            bits_on_storage,
            value_range,
        };
        enc.validate()?;
        Ok(enc)
    }

    /// The validated encoding a column record describes: its column type code (an
    /// unknown code is [`Error::Unsupported`]), bits on storage and value range.
    pub fn from_record(
        column_type: u16,
        bits_on_storage: u16,
        value_range: Option<(f64, f64)>,
    ) -> Result<Self> {
        let column_type = ColumnType::from_u16(column_type)
            .ok_or_else(|| Error::Unsupported(format!("column type {column_type:#x}")))?;
        Self::new(column_type, bits_on_storage, value_range)
    }

    /// Checks the bits on storage against the type and, for Real32Quant, that a finite
    /// range with `min <= max` is present.
    pub fn validate(&self) -> Result<()> {
        self.column_type.validate_bits(self.bits_on_storage)?;
        if self.column_type == ColumnType::Real32Quant {
            self.quant_range()?;
        }
        Ok(())
    }

    fn quant_range(&self) -> Result<(f64, f64)> {
        match self.value_range {
            Some((min, max)) if min.is_finite() && max.is_finite() && min <= max => Ok((min, max)),
            Some((min, max)) => Err(Error::corrupt(
                "column description",
                format!("Real32Quant column has an invalid value range [{min}, {max}]"),
            )),
            None => Err(Error::corrupt(
                "column description",
                "Real32Quant column without a value range",
            )),
        }
    }

    /// The exact uncompressed size in bytes of a page of `n_elements` elements:
    /// `ceil(n * bits / 8)` (12 bytes per element for Switch). `None` on overflow.
    pub fn page_bytes(&self, n_elements: u64) -> Option<u64> {
        n_elements
            .checked_mul(u64::from(self.bits_on_storage))
            .map(|bits| bits.div_ceil(8))
    }
}

/// The decoded elements of a page (or of several pages appended), by in-memory kind.
///
/// Column types map as: Bit → `Bool`; Byte, Char, UInt8 → `U8`; Int8 → `I8`;
/// (Split)Int16 → `I16`; (Split)UInt16 → `U16`; (Split)Int32 → `I32`; (Split)UInt32 → `U32`;
/// (Split)Int64 → `I64`; (Split)UInt64 → `U64`; (Split)Real16, (Split)Real32, Real32Trunc
/// → `F32`; (Split)Real64 and Real32Quant → `F64` (for Real32Quant the exact double ROOT
/// computes; cast it to `f32` for float fields); (Split)Index32/64 → `Index` (cluster-relative
/// end offsets); Switch → `Switch`.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnValues {
    /// Booleans.
    Bool(Vec<bool>),
    /// Signed bytes.
    I8(Vec<i8>),
    /// Unsigned bytes (also Byte and Char).
    U8(Vec<u8>),
    /// 16-bit signed integers.
    I16(Vec<i16>),
    /// 16-bit unsigned integers.
    U16(Vec<u16>),
    /// 32-bit signed integers.
    I32(Vec<i32>),
    /// 32-bit unsigned integers.
    U32(Vec<u32>),
    /// 64-bit signed integers.
    I64(Vec<i64>),
    /// 64-bit unsigned integers.
    U64(Vec<u64>),
    /// Single-precision floats.
    F32(Vec<f32>),
    /// Double-precision floats.
    F64(Vec<f64>),
    /// Collection end offsets, relative to the cluster.
    Index(Vec<u64>),
    /// Variant switch elements: per element an index and a tag.
    Switch {
        /// The index into the selected alternative's column.
        index: Vec<u64>,
        /// The tag (1-based alternative; 0 for an invalid/empty variant).
        tag: Vec<u32>,
    },
}

macro_rules! each_variant {
    ($self:expr, $v:ident => $body:expr, $idx:ident, $tag:ident => $sw:expr) => {
        match $self {
            ColumnValues::Bool($v) => $body,
            ColumnValues::I8($v) => $body,
            ColumnValues::U8($v) => $body,
            ColumnValues::I16($v) => $body,
            ColumnValues::U16($v) => $body,
            ColumnValues::I32($v) => $body,
            ColumnValues::U32($v) => $body,
            ColumnValues::I64($v) => $body,
            ColumnValues::U64($v) => $body,
            ColumnValues::F32($v) => $body,
            ColumnValues::F64($v) => $body,
            ColumnValues::Index($v) => $body,
            ColumnValues::Switch {
                index: $idx,
                tag: $tag,
            } => $sw,
        }
    };
}

use crate::memory::{filled_vec, reusable_vec, Plain};

impl ColumnValues {
    /// An empty value list of the kind `column_type` decodes to.
    pub fn empty(column_type: ColumnType) -> Self {
        Self::zeros(column_type, 0)
    }

    /// `n` zero values of the kind `column_type` decodes to: the in-memory zeros ROOT yields
    /// for the synthetic pages of deferred columns (false, 0, 0.0, index 0, switch (0, 0)).
    /// Note that for Real32Quant this is 0.0, not the decoding of zero bytes (which is `min`).
    pub fn zeros(column_type: ColumnType, n: usize) -> Self {
        Self::allocated(column_type, n, false)
    }

    /// `n` values of the kind `column_type` decodes to, for a decoder that writes every
    /// one: zeros, or a buffer kept from an earlier batch of a stream holding old values
    /// (see `memory::reusable_vec`). Whatever the decoder does not write must be zeroed.
    pub(crate) fn for_decoding(column_type: ColumnType, n: usize) -> Self {
        Self::allocated(column_type, n, true)
    }

    /// `n` values of the kind `column_type` decodes to: zeros, or with `reuse` possibly a
    /// kept buffer's old values (never for `bool`, which has invalid bit patterns).
    fn allocated(column_type: ColumnType, n: usize, reuse: bool) -> Self {
        fn buffer<T: Plain>(n: usize, reuse: bool) -> Vec<T> {
            if reuse {
                reusable_vec(n)
            } else {
                filled_vec(T::default(), n)
            }
        }
        use ColumnType::*;
        match column_type {
            Bit => ColumnValues::Bool(filled_vec(false, n)),
            Byte | Char | UInt8 => ColumnValues::U8(buffer(n, reuse)),
            Int8 => ColumnValues::I8(buffer(n, reuse)),
            Int16 | SplitInt16 => ColumnValues::I16(buffer(n, reuse)),
            UInt16 | SplitUInt16 => ColumnValues::U16(buffer(n, reuse)),
            Int32 | SplitInt32 => ColumnValues::I32(buffer(n, reuse)),
            UInt32 | SplitUInt32 => ColumnValues::U32(buffer(n, reuse)),
            Int64 | SplitInt64 => ColumnValues::I64(buffer(n, reuse)),
            UInt64 | SplitUInt64 => ColumnValues::U64(buffer(n, reuse)),
            Real16 | SplitReal16 | Real32 | SplitReal32 | Real32Trunc => {
                ColumnValues::F32(buffer(n, reuse))
            }
            Real64 | SplitReal64 | Real32Quant => ColumnValues::F64(buffer(n, reuse)),
            Index32 | Index64 | SplitIndex32 | SplitIndex64 => {
                ColumnValues::Index(buffer(n, reuse))
            }
            Switch => ColumnValues::Switch {
                index: buffer(n, reuse),
                tag: buffer(n, reuse),
            },
        }
    }

    /// The bytes one value of the kind `column_type` decodes to takes in memory (an
    /// index and a tag for a switch).
    pub(crate) fn value_size(column_type: ColumnType) -> usize {
        fn of<T>(_: &[T]) -> usize {
            std::mem::size_of::<T>()
        }
        each_variant!(&Self::empty(column_type), v => of(v), index, tag => of(index) + of(tag))
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        each_variant!(self, v => v.len(), index, _tag => index.len())
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The variant's name ("Bool", "F32", "Switch", ...), for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            ColumnValues::Bool(_) => "Bool",
            ColumnValues::I8(_) => "I8",
            ColumnValues::U8(_) => "U8",
            ColumnValues::I16(_) => "I16",
            ColumnValues::U16(_) => "U16",
            ColumnValues::I32(_) => "I32",
            ColumnValues::U32(_) => "U32",
            ColumnValues::I64(_) => "I64",
            ColumnValues::U64(_) => "U64",
            ColumnValues::F32(_) => "F32",
            ColumnValues::F64(_) => "F64",
            ColumnValues::Index(_) => "Index",
            ColumnValues::Switch { .. } => "Switch",
        }
    }

    /// Appends `other`'s elements; both must be the same variant (else [`Error::InvalidArgument`]).
    pub fn append(&mut self, other: ColumnValues) -> Result<()> {
        use ColumnValues as V;
        match (self, other) {
            (V::Bool(a), V::Bool(b)) => a.extend(b),
            (V::I8(a), V::I8(b)) => a.extend(b),
            (V::U8(a), V::U8(b)) => a.extend(b),
            (V::I16(a), V::I16(b)) => a.extend(b),
            (V::U16(a), V::U16(b)) => a.extend(b),
            (V::I32(a), V::I32(b)) => a.extend(b),
            (V::U32(a), V::U32(b)) => a.extend(b),
            (V::I64(a), V::I64(b)) => a.extend(b),
            (V::U64(a), V::U64(b)) => a.extend(b),
            (V::F32(a), V::F32(b)) => a.extend(b),
            (V::F64(a), V::F64(b)) => a.extend(b),
            (V::Index(a), V::Index(b)) => a.extend(b),
            (V::Switch { index: ai, tag: at }, V::Switch { index: bi, tag: bt }) => {
                ai.extend(bi);
                at.extend(bt);
            }
            (a, b) => {
                return Err(Error::InvalidArgument(format!(
                    "cannot append {} values to {} values",
                    b.kind(),
                    a.kind()
                )))
            }
        }
        Ok(())
    }

    /// Makes room for `additional` more values without reallocating.
    pub fn reserve(&mut self, additional: usize) {
        use ColumnValues as V;
        match self {
            V::Bool(v) => v.reserve_exact(additional),
            V::I8(v) => v.reserve_exact(additional),
            V::U8(v) => v.reserve_exact(additional),
            V::I16(v) => v.reserve_exact(additional),
            V::U16(v) => v.reserve_exact(additional),
            V::I32(v) => v.reserve_exact(additional),
            V::U32(v) => v.reserve_exact(additional),
            V::I64(v) => v.reserve_exact(additional),
            V::U64(v) => v.reserve_exact(additional),
            V::F32(v) => v.reserve_exact(additional),
            V::F64(v) => v.reserve_exact(additional),
            V::Index(v) => v.reserve_exact(additional),
            V::Switch { index, tag } => {
                index.reserve_exact(additional);
                tag.reserve_exact(additional);
            }
        }
    }

    /// A copy of the elements `start..start + len`; `None` if that range is out of bounds.
    pub fn slice(&self, start: usize, len: usize) -> Option<ColumnValues> {
        let end = start.checked_add(len)?;
        if end > self.len() {
            return None;
        }
        use ColumnValues as V;
        Some(match self {
            V::Bool(v) => V::Bool(v[start..end].to_vec()),
            V::I8(v) => V::I8(v[start..end].to_vec()),
            V::U8(v) => V::U8(v[start..end].to_vec()),
            V::I16(v) => V::I16(v[start..end].to_vec()),
            V::U16(v) => V::U16(v[start..end].to_vec()),
            V::I32(v) => V::I32(v[start..end].to_vec()),
            V::U32(v) => V::U32(v[start..end].to_vec()),
            V::I64(v) => V::I64(v[start..end].to_vec()),
            V::U64(v) => V::U64(v[start..end].to_vec()),
            V::F32(v) => V::F32(v[start..end].to_vec()),
            V::F64(v) => V::F64(v[start..end].to_vec()),
            V::Index(v) => V::Index(v[start..end].to_vec()),
            V::Switch { index, tag } => V::Switch {
                index: index[start..end].to_vec(),
                tag: tag[start..end].to_vec(),
            },
        })
    }
}

/// Decodes a page of `n_elements` elements stored with `enc` from its uncompressed bytes.
///
/// `data.len()` must be exactly [`ColumnEncoding::page_bytes`]`(n_elements)`; anything else,
/// an invalid encoding, or (for Index32 pages) offsets that do not fit, is an [`Error::Corrupt`].
pub fn decode_page(enc: &ColumnEncoding, data: &[u8], n_elements: u64) -> Result<ColumnValues> {
    enc.validate()?;
    let expected = enc.page_bytes(n_elements);
    if expected != Some(data.len() as u64) {
        return Err(Error::corrupt(
            format!("{} page", enc.column_type),
            format!(
                "{n_elements} elements of {} bits need {} bytes but the page has {}",
                enc.bits_on_storage,
                expected.map_or_else(|| "too many".to_string(), |e| e.to_string()),
                data.len()
            ),
        ));
    }
    // The byte count is a real buffer's length, so this cannot overflow a usize: at most 8
    // elements per byte (Bit columns).
    let n = usize::try_from(n_elements).map_err(|_| {
        Error::corrupt(
            format!("{} page", enc.column_type),
            format!("{n_elements} elements do not fit in memory"),
        )
    })?;
    use ColumnType::*;
    use ColumnValues as V;
    Ok(match enc.column_type {
        Bit => V::Bool(
            unpack_bits(data, n, 1)
                .into_iter()
                .map(|b| b != 0)
                .collect(),
        ),
        Byte | Char | UInt8 => V::U8(data.to_vec()),
        Int8 => V::I8(read_plain(data)),
        Int16 => V::I16(read_plain(data)),
        UInt16 => V::U16(read_plain(data)),
        Int32 => V::I32(read_plain(data)),
        UInt32 => V::U32(read_plain(data)),
        Int64 => V::I64(read_plain(data)),
        UInt64 => V::U64(read_plain(data)),
        Real16 => V::F32(
            read_plain::<u16>(data)
                .into_iter()
                .map(real::half_to_f32)
                .collect(),
        ),
        Real32 => V::F32(read_plain(data)),
        Real64 => V::F64(read_plain(data)),
        Index32 => V::Index(read_plain::<u32>(data).into_iter().map(u64::from).collect()),
        Index64 => V::Index(read_plain(data)),
        Switch => {
            let mut index = Vec::with_capacity(n);
            let mut tag = Vec::with_capacity(n);
            for elem in data.chunks_exact(12) {
                let (i, t) = elem.split_at(8);
                index.push(bytes::Le::from_le(i));
                tag.push(bytes::Le::from_le(t));
            }
            V::Switch { index, tag }
        }
        SplitInt16 => V::I16(
            read_split::<u16>(data, n)
                .into_iter()
                .map(zigzag_decode16)
                .collect(),
        ),
        SplitUInt16 => V::U16(read_split(data, n)),
        SplitInt32 => V::I32(
            read_split::<u32>(data, n)
                .into_iter()
                .map(zigzag_decode32)
                .collect(),
        ),
        SplitUInt32 => V::U32(read_split(data, n)),
        SplitInt64 => V::I64(
            read_split::<u64>(data, n)
                .into_iter()
                .map(zigzag_decode64)
                .collect(),
        ),
        SplitUInt64 => V::U64(read_split(data, n)),
        SplitReal16 => V::F32(
            read_split::<u16>(data, n)
                .into_iter()
                .map(real::half_to_f32)
                .collect(),
        ),
        SplitReal32 => V::F32(read_split(data, n)),
        SplitReal64 => V::F64(read_split(data, n)),
        SplitIndex32 => {
            // Deltas add up in 32 bits, as ROOT's 32-bit on-disk type does.
            let mut acc = 0u32;
            V::Index(
                read_split::<u32>(data, n)
                    .into_iter()
                    .map(|d| {
                        acc = acc.wrapping_add(d);
                        u64::from(acc)
                    })
                    .collect(),
            )
        }
        SplitIndex64 => {
            let mut acc = 0u64;
            V::Index(
                read_split::<u64>(data, n)
                    .into_iter()
                    .map(|d| {
                        acc = acc.wrapping_add(d);
                        acc
                    })
                    .collect(),
            )
        }
        Real32Trunc => {
            let bits = u32::from(enc.bits_on_storage);
            V::F32(
                unpack_bits(data, n, bits)
                    .into_iter()
                    .map(|p| real::untruncate_f32(p, bits))
                    .collect(),
            )
        }
        Real32Quant => {
            let bits = u32::from(enc.bits_on_storage);
            let (min, max) = enc.quant_range()?;
            V::F64(real::unquantize(
                &unpack_bits(data, n, bits),
                bits,
                min,
                max,
            ))
        }
    })
}

fn wrong_values(enc: &ColumnEncoding, values: &ColumnValues) -> Error {
    Error::InvalidArgument(format!(
        "cannot encode {} values as a {} column",
        values.kind(),
        enc.column_type
    ))
}

/// Encodes values into the bytes of one page stored with `enc`: the exact inverse of
/// [`decode_page`]. The values must be the variant `decode_page` yields for the column type;
/// in addition Real32Trunc and Real32Quant accept `F64` and `F32` (cast as ROOT does for
/// double and float fields). Real32Quant values outside the range are an error, as in ROOT;
/// Real32Trunc truncates (ROOT does not round); Real16 rounds to nearest even.
pub fn encode_page(enc: &ColumnEncoding, values: &ColumnValues) -> Result<Vec<u8>> {
    enc.validate()?;
    use ColumnType::*;
    use ColumnValues as V;
    let out = match (enc.column_type, values) {
        (Bit, V::Bool(v)) => pack_bits(v.iter().map(|&b| u32::from(b)), 1),
        (Byte | Char | UInt8, V::U8(v)) => v.clone(),
        (Int8, V::I8(v)) => write_plain(v),
        (Int16, V::I16(v)) => write_plain(v),
        (UInt16, V::U16(v)) => write_plain(v),
        (Int32, V::I32(v)) => write_plain(v),
        (UInt32, V::U32(v)) => write_plain(v),
        (Int64, V::I64(v)) => write_plain(v),
        (UInt64, V::U64(v)) => write_plain(v),
        (Real16, V::F32(v)) => {
            write_plain(&v.iter().map(|&x| real::f32_to_half(x)).collect::<Vec<_>>())
        }
        (Real32, V::F32(v)) => write_plain(v),
        (Real64, V::F64(v)) => write_plain(v),
        (Index32, V::Index(v)) => write_plain(&narrow_index(v)?),
        (Index64, V::Index(v)) => write_plain(v),
        (Switch, V::Switch { index, tag }) => {
            if index.len() != tag.len() {
                return Err(Error::InvalidArgument(format!(
                    "switch values have {} indexes but {} tags",
                    index.len(),
                    tag.len()
                )));
            }
            let mut out = Vec::with_capacity(index.len() * 12);
            for (&i, &t) in index.iter().zip(tag) {
                out.extend_from_slice(&i.to_le_bytes());
                out.extend_from_slice(&t.to_le_bytes());
            }
            out
        }
        (SplitInt16, V::I16(v)) => {
            write_split(&v.iter().map(|&x| zigzag_encode16(x)).collect::<Vec<_>>())
        }
        (SplitUInt16, V::U16(v)) => write_split(v),
        (SplitInt32, V::I32(v)) => {
            write_split(&v.iter().map(|&x| zigzag_encode32(x)).collect::<Vec<_>>())
        }
        (SplitUInt32, V::U32(v)) => write_split(v),
        (SplitInt64, V::I64(v)) => {
            write_split(&v.iter().map(|&x| zigzag_encode64(x)).collect::<Vec<_>>())
        }
        (SplitUInt64, V::U64(v)) => write_split(v),
        (SplitReal16, V::F32(v)) => {
            write_split(&v.iter().map(|&x| real::f32_to_half(x)).collect::<Vec<_>>())
        }
        (SplitReal32, V::F32(v)) => write_split(v),
        (SplitReal64, V::F64(v)) => write_split(v),
        (SplitIndex32, V::Index(v)) => write_split(&delta(&narrow_index(v)?)),
        (SplitIndex64, V::Index(v)) => write_split(&delta(v)),
        (Real32Trunc, V::F32(v)) => {
            let bits = u32::from(enc.bits_on_storage);
            pack_bits(v.iter().map(|&x| real::truncate_f32(x, bits)), bits)
        }
        (Real32Trunc, V::F64(v)) => {
            let bits = u32::from(enc.bits_on_storage);
            pack_bits(
                v.iter()
                    .map(|&x| real::truncate_f32(real::f64_to_f32(x), bits)),
                bits,
            )
        }
        (Real32Quant, V::F64(v)) => encode_quant(enc, v)?,
        (Real32Quant, V::F32(v)) => {
            encode_quant(enc, &v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>())?
        }
        _ => return Err(wrong_values(enc, values)),
    };
    Ok(out)
}

fn encode_quant(enc: &ColumnEncoding, v: &[f64]) -> Result<Vec<u8>> {
    let bits = u32::from(enc.bits_on_storage);
    let (min, max) = enc.quant_range()?;
    let q = real::quantize(v, bits, min, max)?;
    Ok(pack_bits(q.into_iter(), bits))
}

fn narrow_index(v: &[u64]) -> Result<Vec<u32>> {
    v.iter()
        .map(|&x| u32::try_from(x).map_err(|_| index32_overflow(x)))
        .collect()
}

/// The error for an offset that does not fit an Index32 column.
fn index32_overflow(x: u64) -> Error {
    Error::InvalidArgument(format!("offset {x} does not fit an Index32 column"))
}

/// Delta encoding: the first element as is, then differences (wrapping, in the on-disk width).
fn delta<T: Copy + WrappingSub>(v: &[T]) -> Vec<T> {
    let mut prev: Option<T> = None;
    v.iter()
        .map(|&x| {
            let d = match prev {
                Some(p) => x.wrapping_sub_(p),
                None => x,
            };
            prev = Some(x);
            d
        })
        .collect()
}

trait WrappingSub {
    fn wrapping_sub_(self, other: Self) -> Self;
}
impl WrappingSub for u32 {
    fn wrapping_sub_(self, other: Self) -> Self {
        self.wrapping_sub(other)
    }
}
impl WrappingSub for u64 {
    fn wrapping_sub_(self, other: Self) -> Self {
        self.wrapping_sub(other)
    }
}

#[cfg(test)]
mod tests;
