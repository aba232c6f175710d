//! Values streamed back into ROOT's object-wise layout: the inverse of
//! [`StreamCursor::decode`](super::StreamCursor::decode), from the values a [`Builder`]
//! holds. It joins the branches of a split object into whole objects, and re-streams
//! collections that a TTree streamed member-wise, for ROOT's streamer field (which
//! stores what `TClass::Streamer` writes, object-wise).
//!
//! What ROOT writes, mirrored:
//! * an object of a class: a byte count and its class version (version 0 and the class
//!   checksum for a class without `ClassDef`, [`ClassLayout::without_class_def`]), then
//!   its bases (each an object with its header) and members;
//! * a `TObject`: its bare version (1), `fUniqueID`, `fBits` (without the allocation bits,
//!   as `TObject::Streamer` writes them since ROOT 6.30);
//! * an STL collection or `std::string` member: a byte count and the version of
//!   `TStreamerInfo` (what `TStreamerInfo::WriteBuffer` writes for them), then the count
//!   and the items (objects of a class each with its header, others without);
//! * a counted C array: a byte saying whether values follow, then the values;
//! * a `std::bitset<N>`: as a collection of N bools (a header where a collection has one).
//!
//! A `std::array` named by its type (ROOT's class `array<T,N>`, whose checksum is not
//! known here) is refused ([`restreamable`]).

use super::type_layout::{ClassKind, ClassLayout, Streamed, TOBJECT_ALLOCATION_BITS};
use super::value_decode::Builder;
use super::values::{LeafType, RealPacking};
use crate::encoding::ColumnValues;
use crate::error::{Error, Result};

/// The class version of `TStreamerInfo` (ROOT 6.40), which ROOT writes in the header of
/// an STL collection or string member.
const STREAMER_INFO_VERSION: u16 = 10;

/// `TObject`'s class version.
const TOBJECT_VERSION: u16 = 1;

/// The largest byte count a header holds (its two top bits are flags).
const MAX_BYTE_COUNT: u32 = 0x3FFF_FFFF;

fn shape_error() -> Error {
    Error::InvalidArgument("values of another shape than their streamed type".to_string())
}

/// Streams value `index` of `values` (of type `t`) onto `out`, with the header a whole
/// value or class member has when `header` (as
/// [`StreamCursor::decode`](super::StreamCursor::decode) reads it).
pub fn encode(
    t: &Streamed,
    values: &Builder,
    index: usize,
    header: bool,
    out: &mut Vec<u8>,
) -> Result<()> {
    match (t, values) {
        (Streamed::Prim(p), Builder::Prim(_, v)) => prim(*p, v, index, out),
        (Streamed::TString, Builder::Str(offsets, bytes)) => {
            string(str_at(offsets, bytes, index)?, out)
        }
        (Streamed::String, Builder::Str(offsets, bytes)) => {
            let start = header.then(|| begin(out, STREAMER_INFO_VERSION, None));
            string(str_at(offsets, bytes, index)?, out)?;
            end(out, start)
        }
        (Streamed::Vector(_, item), Builder::List(offsets, items)) => {
            let start = header.then(|| begin(out, STREAMER_INFO_VERSION, None));
            let range = range_at(offsets, index)?;
            let n = i32::try_from(range.len()).map_err(|_| {
                Error::InvalidArgument("a collection of more than 2^31 items".to_string())
            })?;
            out.extend_from_slice(&n.to_be_bytes());
            // Objects of a class each by their class's streamer, behind their header.
            let item_header =
                matches!(item.as_ref(), Streamed::Object(c) if c.kind == ClassKind::Class);
            for j in range {
                encode(item, items, j, item_header, out)?;
            }
            end(out, start)
        }
        (Streamed::Bitset(bits), Builder::Fixed(_, values)) => {
            // As a collection of bools: the count, then a byte per bit.
            let start = header.then(|| begin(out, STREAMER_INFO_VERSION, None));
            let n = i32::try_from(*bits).map_err(|_| shape_error())?;
            out.extend_from_slice(&n.to_be_bytes());
            let Builder::Prim(_, v) = values.as_ref() else {
                return Err(shape_error());
            };
            let first = index.checked_mul(*bits).ok_or_else(shape_error)?;
            for j in first..first + bits {
                prim(LeafType::Bool, v, j, out)?;
            }
            end(out, start)
        }
        (Streamed::Object(c), _) if c.kind == ClassKind::StdArray => Err(Error::Unsupported(
            format!("{} named by its type cannot be streamed again", c.name),
        )),
        (Streamed::Array(item, n), Builder::Fixed(_, items)) => {
            let first = index.checked_mul(*n).ok_or_else(shape_error)?;
            for j in first..first + n {
                encode(item, items, j, false, out)?;
            }
            Ok(())
        }
        (Streamed::Object(c), Builder::Struct(fields, _)) if c.kind == ClassKind::TObject => {
            tobject(fields, index, out)
        }
        (Streamed::Object(c), Builder::Struct(fields, _)) => {
            let start = if header {
                let (version, checksum) = class_version(c);
                Some(begin(out, version, checksum))
            } else {
                None
            };
            object(c, fields, index, out)?;
            end(out, start)
        }
        _ => Err(shape_error()),
    }
}

/// Whether values of `t` can be streamed again (no `std::array` named by its type).
pub fn restreamable(t: &Streamed) -> bool {
    match t {
        Streamed::Object(c) => {
            c.kind != ClassKind::StdArray
                && c.bases
                    .iter()
                    .all(|b| restreamable(&Streamed::Object(b.clone())))
                && c.members.iter().all(|(_, m)| restreamable(m))
        }
        Streamed::Vector(_, item) | Streamed::Array(item, _) => restreamable(item),
        _ => true,
    }
}

/// An object's bases and members (no header of its own).
fn object(c: &ClassLayout, fields: &[Builder], index: usize, out: &mut Vec<u8>) -> Result<()> {
    if fields.len() != c.bases.len() + c.members.len() {
        return Err(shape_error());
    }
    let (bases, members) = fields.split_at(c.bases.len());
    for (base, values) in c.bases.iter().zip(bases) {
        encode(&Streamed::Object(base.clone()), values, index, true, out)?;
    }
    for ((_, m), values) in c.members.iter().zip(members) {
        match m {
            Streamed::Counted(p, _) => {
                let Builder::List(offsets, items) = values else {
                    return Err(shape_error());
                };
                let Builder::Prim(_, v) = items.as_ref() else {
                    return Err(shape_error());
                };
                // ROOT writes the values only for a non-null array of a non-zero length.
                let range = range_at(offsets, index)?;
                out.push(u8::from(!range.is_empty()));
                for j in range {
                    prim(*p, v, j, out)?;
                }
            }
            _ => encode(m, values, index, true, out)?,
        }
    }
    Ok(())
}

/// A `TObject`: its bare version, `fUniqueID` and `fBits` without the allocation bits
/// (`TObject::Streamer` leaves them out, as ROOT's RNTuple does).
fn tobject(fields: &[Builder], index: usize, out: &mut Vec<u8>) -> Result<()> {
    let [Builder::Prim(_, ColumnValues::U32(ids)), Builder::Prim(_, ColumnValues::U32(bits))] =
        fields
    else {
        return Err(shape_error());
    };
    let (Some(id), Some(bits)) = (ids.get(index), bits.get(index)) else {
        return Err(shape_error());
    };
    out.extend_from_slice(&TOBJECT_VERSION.to_be_bytes());
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&(bits & !TOBJECT_ALLOCATION_BITS).to_be_bytes());
    Ok(())
}

/// The version ROOT writes for class `c`: its class version, or 0 and its checksum for a
/// class without `ClassDef`.
fn class_version(c: &ClassLayout) -> (u16, Option<u32>) {
    match u16::try_from(c.version) {
        Ok(v) if !c.without_class_def() => (v, None),
        _ => (0, Some(c.checksum)),
    }
}

/// Appends an object's `members` (already streamed) behind its class header: the byte
/// count, `version` and, after version 0, `checksum`.
pub fn with_class_header(
    version: u16,
    checksum: Option<u32>,
    members: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    let start = begin(out, version, checksum);
    out.extend_from_slice(members);
    end(out, Some(start))
}

/// Starts a header (a byte count to fill in, the version, a checksum after version 0);
/// returns where the byte count is.
fn begin(out: &mut Vec<u8>, version: u16, checksum: Option<u32>) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&version.to_be_bytes());
    if let Some(c) = checksum {
        out.extend_from_slice(&c.to_be_bytes());
    }
    at
}

/// Fills in the byte count of the header started at `start`.
fn end(out: &mut [u8], start: Option<usize>) -> Result<()> {
    let Some(at) = start else {
        return Ok(());
    };
    let count = u32::try_from(out.len() - at - 4)
        .ok()
        .filter(|&n| n <= MAX_BYTE_COUNT)
        .ok_or_else(|| {
            Error::InvalidArgument("an object of 1 GiB or more cannot be streamed".to_string())
        })?;
    let word = 0x4000_0000 | count;
    out[at..at + 4].copy_from_slice(&word.to_be_bytes());
    Ok(())
}

/// A string: a one-byte length (or 255 and a four-byte length), then the characters.
fn string(s: &[u8], out: &mut Vec<u8>) -> Result<()> {
    match u8::try_from(s.len()) {
        Ok(n) if n < 255 => out.push(n),
        _ => {
            let n = u32::try_from(s.len()).map_err(|_| {
                Error::InvalidArgument("a string of 4 GiB or more cannot be streamed".to_string())
            })?;
            out.push(255);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
    out.extend_from_slice(s);
    Ok(())
}

fn str_at<'a>(offsets: &[i64], bytes: &'a [u8], index: usize) -> Result<&'a [u8]> {
    let range = range_at(offsets, index)?;
    bytes.get(range).ok_or_else(shape_error)
}

/// Items `offsets[index]..offsets[index + 1]`.
fn range_at(offsets: &[i64], index: usize) -> Result<std::ops::Range<usize>> {
    let bound = |i: usize| {
        offsets
            .get(i)
            .and_then(|&o| usize::try_from(o).ok())
            .ok_or_else(shape_error)
    };
    let (a, b) = (bound(index)?, bound(index + 1)?);
    if a > b {
        return Err(shape_error());
    }
    Ok(a..b)
}

/// Value `index` of `v` in `p`'s big-endian form on disk (`Double32_t` and `Float16_t`
/// packed again).
fn prim(p: LeafType, v: &ColumnValues, index: usize, out: &mut Vec<u8>) -> Result<()> {
    macro_rules! be {
        ($values:expr) => {{
            let x = $values.get(index).ok_or_else(shape_error)?;
            out.extend_from_slice(&x.to_be_bytes());
        }};
    }
    match (p, v) {
        (LeafType::Bool, ColumnValues::Bool(v)) => {
            out.push(u8::from(*v.get(index).ok_or_else(shape_error)?));
        }
        (LeafType::Char, ColumnValues::I8(v)) => be!(v),
        (LeafType::UChar, ColumnValues::U8(v)) => be!(v),
        (LeafType::Short, ColumnValues::I16(v)) => be!(v),
        (LeafType::UShort, ColumnValues::U16(v)) => be!(v),
        (LeafType::Int, ColumnValues::I32(v)) => be!(v),
        (LeafType::UInt, ColumnValues::U32(v)) => be!(v),
        (LeafType::Long64, ColumnValues::I64(v)) => be!(v),
        (LeafType::ULong64, ColumnValues::U64(v)) => be!(v),
        (LeafType::Float, ColumnValues::F32(v)) => be!(v),
        (LeafType::Double, ColumnValues::F64(v)) => be!(v),
        (LeafType::Double32(packing), ColumnValues::F64(v)) => {
            packed(packing, *v.get(index).ok_or_else(shape_error)?, out);
        }
        (LeafType::Float16(packing), ColumnValues::F32(v)) => {
            packed(
                packing,
                f64::from(*v.get(index).ok_or_else(shape_error)?),
                out,
            );
        }
        _ => return Err(shape_error()),
    }
    Ok(())
}

/// A `Double32_t`/`Float16_t` value packed as ROOT packs it (the inverse of the
/// unpacking: a value unpacked from a packed one packs back to the same bytes).
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
fn packed(packing: RealPacking, x: f64, out: &mut Vec<u8>) {
    match packing {
        RealPacking::Float => out.extend_from_slice(&(x as f32).to_be_bytes()),
        RealPacking::Ranged { min, factor } => {
            // As ROOT: the nearest step from the range's lower end (clamped to it).
            let steps = (0.5 + factor * (x - min)).max(0.0);
            let i = if steps >= f64::from(u32::MAX) {
                u32::MAX
            } else {
                steps as u32
            };
            out.extend_from_slice(&i.to_be_bytes());
        }
        RealPacking::Truncated(nbits) => {
            let bits = (x as f32).to_bits();
            let exponent = ((bits >> 23) & 0xFF) as u8;
            let shift = 23u32.saturating_sub(nbits);
            let mut mantissa = (bits >> shift) & ((1u32 << nbits.min(23)) - 1);
            if x.is_sign_negative() {
                mantissa |= 1 << (nbits + 1);
            }
            out.push(exponent);
            // The mantissa and sign fit in 16 bits for the at most 14 bits ROOT packs.
            out.extend_from_slice(&(mantissa as u16).to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ttree::type_layout::tests::{counted_class, counted_objects};
    use crate::ttree::{StreamCursor, TypeResolver};

    /// Decodes `bytes` as values of `t` (one after the other, each with a header when
    /// `header`), streams them back and checks the bytes are the same.
    fn round_trip(t: &Streamed, bytes: &[u8], values: usize, header: bool) {
        let mut built = Builder::new(t);
        let mut cursor = StreamCursor::new(bytes);
        for _ in 0..values {
            cursor.decode(t, &mut built, header).unwrap();
        }
        assert_eq!(cursor.remaining(), 0);
        let mut out = Vec::new();
        for i in 0..values {
            encode(t, &built, i, header, &mut out).unwrap();
        }
        assert_eq!(out, bytes);
    }

    #[test]
    fn objects_with_counted_arrays_stream_back_to_their_bytes() {
        let t = counted_class().type_of("C").unwrap();
        // The second object: fN 0, no values, flag 0.
        round_trip(&t, &counted_objects(0), 2, true);
    }

    #[test]
    fn collections_strings_and_tobjects_stream_back_to_their_bytes() {
        // A vector<string> member: header (version 10), count 2, strings without headers.
        let t = TypeResolver::default().type_of("vector<string>").unwrap();
        let mut bytes = vec![0x40, 0, 0, 11, 0, 10];
        bytes.extend(2i32.to_be_bytes());
        bytes.extend([2, b'a', b'b', 1, b'c']);
        round_trip(&t, &bytes, 1, true);
        // map<int,float> items: pairs without headers.
        let t = TypeResolver::default().type_of("map<int,float>").unwrap();
        let mut bytes = 2i32.to_be_bytes().to_vec();
        for (k, v) in [(1i32, 0.5f32), (4, -2.0)] {
            bytes.extend(k.to_be_bytes());
            bytes.extend(v.to_be_bytes());
        }
        round_trip(&t, &bytes, 1, false);
        // TObject: bare version, id, bits (a user bit; no kIsOnHeap or kNotDeleted).
        let t = TypeResolver::default().type_of("TObject").unwrap();
        round_trip(&t, &[0, 1, 0, 0, 0, 7, 0, 0, 0x40, 0], 1, true);
    }

    #[test]
    fn bitsets_stream_back_as_collections_of_bools() {
        let t = TypeResolver::default().type_of("bitset<3>").unwrap();
        let mut bytes = vec![0x40, 0, 0, 9, 0, 10];
        bytes.extend(3i32.to_be_bytes());
        bytes.extend([1, 0, 1]);
        round_trip(&t, &bytes, 1, true);
        assert!(restreamable(&t));
        let arrays = TypeResolver::default()
            .type_of("vector<array<int,2> >")
            .unwrap();
        assert!(!restreamable(&arrays));
    }

    #[test]
    fn packed_reals_pack_back_to_their_bytes() {
        for packing in [
            RealPacking::Float,
            RealPacking::Truncated(12),
            RealPacking::Truncated(7),
            RealPacking::from_title("x[0,1,16]", 0),
            RealPacking::from_title("x[-pi,pi,20]", 0),
        ] {
            let size = packing.disk_size();
            let t = Streamed::Prim(LeafType::Double32(packing));
            // Packed values from every corner: signs, exponents, mantissas, range ends.
            for seed in [
                0u32,
                1,
                0x7F12_3456,
                0xC0A0_0001,
                0x3F80_0000,
                0xFFFF,
                0x8000_1234,
            ] {
                let mut bytes = seed.to_be_bytes()[..size].to_vec();
                if let RealPacking::Truncated(n) = packing {
                    // Only the mantissa's bits and the sign are ever written.
                    let m = u16::from_be_bytes([bytes[1], bytes[2]]);
                    let keep = ((1u16 << n) - 1) | (1 << (n + 1));
                    bytes[1..3].copy_from_slice(&(m & keep).to_be_bytes());
                }
                round_trip(&t, &bytes, 1, false);
            }
        }
    }
}
