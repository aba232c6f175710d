//! Leaf values as Arrow: the fundamental types a `TLeaf` holds, big-endian in baskets,
//! decoded into the [`ColumnValues`] of their kind (never index or switch elements).

use super::meta::Leaf;
use crate::encoding::ColumnValues;
use crate::error::{Error, Result};
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{ArrayRef, BooleanArray, PrimitiveArray};
use arrow_buffer::ScalarBuffer;
use std::sync::Arc;

/// How a `Double32_t` or `Float16_t` value is packed on disk, from the `[min,max,bits]`
/// in its title (ROOT's `TStreamerElement` range rules).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RealPacking {
    /// A 32-bit float (`Double32_t` without a range).
    Float,
    /// A float with its mantissa cut to `nbits` bits: a byte of exponent and two bytes of
    /// sign and mantissa (`Float16_t` without a range: 12 bits; `[0,0,n]` with n < 15).
    Truncated(u32),
    /// An unsigned 32-bit integer `i`, the value being `i / factor + min`.
    Ranged {
        /// The range's lower end.
        min: f64,
        /// `2^bits / (max - min)`.
        factor: f64,
    },
}

impl RealPacking {
    /// The packing a leaf title or member comment gives (`x[0,1,16]`, `[-pi,pi]`), with
    /// `default_bits` (12 for `Float16_t`, 0 for `Double32_t`) when it has no range.
    pub fn from_title(title: &str, default_bits: u32) -> RealPacking {
        let (min, max, factor) = title_range(title);
        if factor > 0.0 {
            RealPacking::Ranged { min, factor }
        } else if min > 0.0 {
            // ROOT keeps the number of bits in `min` (as bits + 0.1).
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            RealPacking::Truncated(min as u32)
        } else if default_bits > 0 {
            let _ = max;
            RealPacking::Truncated(default_bits)
        } else {
            RealPacking::Float
        }
    }

    /// Bytes per value on disk.
    pub fn disk_size(self) -> usize {
        match self {
            RealPacking::Float | RealPacking::Ranged { .. } => 4,
            RealPacking::Truncated(_) => 3,
        }
    }

    /// Decodes one value from its `disk_size()` bytes.
    fn decode(self, b: &[u8]) -> f64 {
        match self {
            RealPacking::Float => f64::from(f32::from_be_bytes([b[0], b[1], b[2], b[3]])),
            RealPacking::Ranged { min, factor } => {
                f64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])) / factor + min
            }
            RealPacking::Truncated(nbits) => {
                let exponent = u32::from(b[0]);
                let mantissa = u32::from(u16::from_be_bytes([b[1], b[2]]));
                let mask = (1u32 << (nbits + 1)) - 1;
                let bits = (exponent << 23) | ((mantissa & mask) << (23 - nbits));
                let value = f32::from_bits(bits);
                f64::from(if mantissa & (1 << (nbits + 1)) != 0 {
                    -value
                } else {
                    value
                })
            }
        }
    }
}

/// ROOT's reading of `[min,max(,bits)]` in a title: `(min, max, factor)`, where factor is
/// `2^bits / (max - min)` when `min < max`, else 0 and `min` is `bits + 0.1` when bits <
/// 15. The first bracket may be a dimension (`x[3][0,1,8]`); `pi`, `2pi`, `pi/2`, `pi/4`
/// and a minus sign are understood.
fn title_range(title: &str) -> (f64, f64, f64) {
    let Some(left) = title.find('[') else {
        return (0.0, 0.0, 0.0);
    };
    let mut group = &title[left + 1..];
    let Some(right) = group.find(']') else {
        return (0.0, 0.0, 0.0);
    };
    if !group[..right].contains(',') {
        // The first bracket was a dimension: the range is in the next one.
        let rest = &group[right + 1..];
        let Some(l2) = rest.find('[') else {
            return (0.0, 0.0, 0.0);
        };
        group = &rest[l2 + 1..];
        match group.find(']') {
            Some(r2) if group[..r2].contains(',') => {}
            _ => return (0.0, 0.0, 0.0),
        }
    }
    let inside = &group[..group.find(']').unwrap_or(group.len())];
    let parts: Vec<&str> = inside.splitn(3, ',').collect();
    let mut nbits: u32 = 32;
    if let Some(bits) = parts.get(2) {
        nbits = bits.trim().parse::<u32>().unwrap_or(32);
        if !(2..=32).contains(&nbits) {
            nbits = 32;
        }
    }
    let number = |s: &str| -> f64 {
        let s: String = s.to_lowercase().chars().filter(|c| *c != ' ').collect();
        if s.contains("pi") {
            let pi = std::f64::consts::PI;
            let v = if s.contains("2pi") || s.contains("2*pi") || s.contains("twopi") {
                2.0 * pi
            } else if s.contains("pi/2") {
                pi / 2.0
            } else if s.contains("pi/4") {
                pi / 4.0
            } else {
                pi
            };
            if s.contains('-') {
                -v
            } else {
                v
            }
        } else {
            leading_float(&s)
        }
    };
    let mut min = number(parts.first().copied().unwrap_or(""));
    let max = number(parts.get(1).copied().unwrap_or(""));
    let bigint = if nbits < 32 {
        f64::from(1u32 << nbits)
    } else {
        f64::from(u32::MAX)
    };
    let factor = if min < max { bigint / (max - min) } else { 0.0 };
    if min >= max && nbits < 15 {
        min = f64::from(nbits) + 0.1;
    }
    (min, max, factor)
}

/// The number at the start of `s`, as C's `sscanf("%lg")` reads it (0 when none).
fn leading_float(s: &str) -> f64 {
    let end = s
        .char_indices()
        .take_while(|&(i, c)| {
            c.is_ascii_digit()
                || c == '.'
                || ((c == '-' || c == '+')
                    && (i == 0 || matches!(s.as_bytes()[i - 1], b'e' | b'E')))
                || ((c == 'e' || c == 'E') && i > 0)
        })
        .map(|(i, c)| i + c.len_utf8())
        .last()
        .unwrap_or(0);
    (0..=end)
        .rev()
        .find_map(|e| s[..e].parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// The type of a leaf's values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LeafType {
    /// `Bool_t` (`/O`).
    Bool,
    /// `Char_t` (`/B`).
    Char,
    /// `UChar_t` (`/b`).
    UChar,
    /// `Short_t` (`/S`).
    Short,
    /// `UShort_t` (`/s`).
    UShort,
    /// `Int_t` (`/I`).
    Int,
    /// `UInt_t` (`/i`).
    UInt,
    /// `Long64_t` (`/L`) and `Long_t` (`/G`).
    Long64,
    /// `ULong64_t` (`/l`) and `ULong_t` (`/g`).
    ULong64,
    /// `Float_t` (`/F`).
    Float,
    /// `Double_t` (`/D`).
    Double,
    /// `Double32_t` (`/d`): a double in memory, packed on disk.
    Double32(RealPacking),
    /// `Float16_t` (`/f`): a float in memory, packed on disk.
    Float16(RealPacking),
    /// A C string (`/C`).
    CString,
}

impl LeafType {
    /// The type of a plain leaf (`TLeafF`, `TLeafI`, ...), if it is one this reader knows.
    pub fn of(leaf: &Leaf) -> Option<LeafType> {
        let u = leaf.is_unsigned;
        Some(match leaf.class_name.as_str() {
            "TLeafO" => LeafType::Bool,
            "TLeafB" if u => LeafType::UChar,
            "TLeafB" => LeafType::Char,
            "TLeafS" if u => LeafType::UShort,
            "TLeafS" => LeafType::Short,
            "TLeafI" if u => LeafType::UInt,
            "TLeafI" => LeafType::Int,
            "TLeafL" | "TLeafG" if u => LeafType::ULong64,
            "TLeafL" | "TLeafG" => LeafType::Long64,
            "TLeafF" => LeafType::Float,
            "TLeafD" => LeafType::Double,
            "TLeafD32" => LeafType::Double32(RealPacking::from_title(&leaf.title, 0)),
            "TLeafF16" => LeafType::Float16(RealPacking::from_title(&leaf.title, 12)),
            "TLeafC" => LeafType::CString,
            _ => return None,
        })
    }

    /// Bytes per value in a basket (0 for C strings, whose size varies).
    pub fn disk_size(self) -> usize {
        match self {
            LeafType::Bool | LeafType::Char | LeafType::UChar => 1,
            LeafType::Short | LeafType::UShort => 2,
            LeafType::Int | LeafType::UInt | LeafType::Float => 4,
            LeafType::Double32(p) | LeafType::Float16(p) => p.disk_size(),
            LeafType::Long64 | LeafType::ULong64 | LeafType::Double => 8,
            LeafType::CString => 0,
        }
    }

    /// The C++ type of the RNTuple field ROOT's importer makes of it.
    pub fn cpp_type(self) -> &'static str {
        match self {
            LeafType::Bool => "bool",
            LeafType::Char => "char",
            LeafType::UChar => "std::uint8_t",
            LeafType::Short => "std::int16_t",
            LeafType::UShort => "std::uint16_t",
            LeafType::Int => "std::int32_t",
            LeafType::UInt => "std::uint32_t",
            LeafType::Long64 => "std::int64_t",
            LeafType::ULong64 => "std::uint64_t",
            LeafType::Float => "float",
            LeafType::Double => "double",
            LeafType::Double32(_) => "Double32_t",
            // ROOT's RNTuple has no Float16_t (its importer refuses it): a float.
            LeafType::Float16(_) => "float",
            LeafType::CString => "std::string",
        }
    }

    /// Decodes `bytes` (whole values, big-endian) into an Arrow array.
    pub fn decode(self, bytes: &[u8], what: &str) -> Result<ArrayRef> {
        let size = self.disk_size();
        if size == 0 || bytes.len() % size != 0 {
            return Err(Error::corrupt(
                what.to_string(),
                format!("{} bytes are not whole values of {size} bytes", bytes.len()),
            ));
        }
        let mut values = self.values(bytes.len() / size)?;
        self.append_be(&mut values, bytes);
        leaf_array(values)
    }

    /// An empty vector for values of this type, with room for `capacity` of them.
    pub fn values(self, capacity: usize) -> Result<ColumnValues> {
        Ok(match self {
            LeafType::Bool => ColumnValues::Bool(Vec::with_capacity(capacity)),
            LeafType::Char => ColumnValues::I8(Vec::with_capacity(capacity)),
            LeafType::UChar => ColumnValues::U8(Vec::with_capacity(capacity)),
            LeafType::Short => ColumnValues::I16(Vec::with_capacity(capacity)),
            LeafType::UShort => ColumnValues::U16(Vec::with_capacity(capacity)),
            LeafType::Int => ColumnValues::I32(Vec::with_capacity(capacity)),
            LeafType::UInt => ColumnValues::U32(Vec::with_capacity(capacity)),
            LeafType::Long64 => ColumnValues::I64(Vec::with_capacity(capacity)),
            LeafType::ULong64 => ColumnValues::U64(Vec::with_capacity(capacity)),
            LeafType::Float | LeafType::Float16(_) => {
                ColumnValues::F32(Vec::with_capacity(capacity))
            }
            LeafType::Double | LeafType::Double32(_) => {
                ColumnValues::F64(Vec::with_capacity(capacity))
            }
            LeafType::CString => {
                return Err(Error::InvalidArgument(
                    "C strings are decoded entry by entry, not as values".to_string(),
                ))
            }
        })
    }

    /// Appends the whole big-endian values of this type in `bytes` to `values`
    /// (`Double32_t` and `Float16_t` unpacked). A vector of another type than
    /// [`LeafType::values`] makes is a caller's mistake: nothing is appended.
    pub fn append_be(self, values: &mut ColumnValues, bytes: &[u8]) {
        macro_rules! be {
            ($v:expr, $native:ty, $n:literal) => {
                $v.extend(bytes.chunks_exact($n).map(|c| {
                    let mut a = [0u8; $n];
                    a.copy_from_slice(c);
                    <$native>::from_be_bytes(a)
                }))
            };
        }
        let size = self.disk_size().max(1);
        match (values, self) {
            (ColumnValues::Bool(v), LeafType::Bool) => v.extend(bytes.iter().map(|&b| b != 0)),
            (ColumnValues::I8(v), LeafType::Char) => be!(v, i8, 1),
            (ColumnValues::U8(v), LeafType::UChar) => v.extend_from_slice(bytes),
            (ColumnValues::I16(v), LeafType::Short) => be!(v, i16, 2),
            (ColumnValues::U16(v), LeafType::UShort) => be!(v, u16, 2),
            (ColumnValues::I32(v), LeafType::Int) => be!(v, i32, 4),
            (ColumnValues::U32(v), LeafType::UInt) => be!(v, u32, 4),
            (ColumnValues::I64(v), LeafType::Long64) => be!(v, i64, 8),
            (ColumnValues::U64(v), LeafType::ULong64) => be!(v, u64, 8),
            (ColumnValues::F32(v), LeafType::Float) => be!(v, f32, 4),
            (ColumnValues::F64(v), LeafType::Double) => be!(v, f64, 8),
            (ColumnValues::F64(v), LeafType::Double32(p)) => {
                v.extend(bytes.chunks_exact(size).map(|c| p.decode(c)));
            }
            (ColumnValues::F32(v), LeafType::Float16(p)) => {
                // Values are floats: ROOT computes them in float.
                #[allow(clippy::cast_possible_truncation)]
                v.extend(bytes.chunks_exact(size).map(|c| p.decode(c) as f32));
            }
            _ => {}
        }
    }
}

/// The Arrow array of leaf values (the vector becomes its buffer, uncopied). Index and
/// switch elements are no leaf values: [`Error::InvalidArgument`].
pub fn leaf_array(values: ColumnValues) -> Result<ArrayRef> {
    macro_rules! arr {
        ($arrow:ty, $v:expr) => {
            Arc::new(PrimitiveArray::<$arrow>::new(ScalarBuffer::from($v), None)) as ArrayRef
        };
    }
    Ok(match values {
        ColumnValues::Bool(v) => Arc::new(BooleanArray::from(v)),
        ColumnValues::I8(v) => arr!(Int8Type, v),
        ColumnValues::U8(v) => arr!(UInt8Type, v),
        ColumnValues::I16(v) => arr!(Int16Type, v),
        ColumnValues::U16(v) => arr!(UInt16Type, v),
        ColumnValues::I32(v) => arr!(Int32Type, v),
        ColumnValues::U32(v) => arr!(UInt32Type, v),
        ColumnValues::I64(v) => arr!(Int64Type, v),
        ColumnValues::U64(v) => arr!(UInt64Type, v),
        ColumnValues::F32(v) => arr!(Float32Type, v),
        ColumnValues::F64(v) => arr!(Float64Type, v),
        other @ (ColumnValues::Index(_) | ColumnValues::Switch { .. }) => {
            return Err(Error::InvalidArgument(format!(
                "{} elements are no leaf values",
                other.kind()
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;

    #[test]
    fn big_endian_values_decode() {
        let a = LeafType::Int
            .decode(&[0, 0, 1, 2, 0xFF, 0xFF, 0xFF, 0xFE], "x")
            .unwrap();
        assert_eq!(a.as_primitive::<Int32Type>().values(), &[258, -2]);
        let a = LeafType::Double32(RealPacking::Float)
            .decode(&1.5f32.to_be_bytes(), "x")
            .unwrap();
        assert_eq!(a.as_primitive::<Float64Type>().values(), &[1.5]);
        let err = LeafType::Short.decode(&[1, 2, 3], "x").unwrap_err();
        assert!(err.to_string().contains("whole values"), "{err}");
    }

    #[test]
    fn ranges_follow_root_rules() {
        assert_eq!(RealPacking::from_title("x", 0), RealPacking::Float);
        assert_eq!(RealPacking::from_title("x", 12), RealPacking::Truncated(12));
        assert_eq!(
            RealPacking::from_title("x/d[0,0,10]", 0),
            RealPacking::Truncated(10)
        );
        // 16 bits over [0, 1]: factor 65536.
        assert_eq!(
            RealPacking::from_title("d32r/d[0,1,16]", 0),
            RealPacking::Ranged {
                min: 0.0,
                factor: 65536.0
            }
        );
        // A dimension first, then the range; pi understood.
        match RealPacking::from_title("a[3][-pi,pi,8]", 0) {
            RealPacking::Ranged { min, factor } => {
                assert_eq!(min, -std::f64::consts::PI);
                assert_eq!(factor, 256.0 / (2.0 * std::f64::consts::PI));
            }
            other => panic!("{other:?}"),
        }
        // [0,0,16]: 16 bits is not < 15, so no truncation: a plain float.
        assert_eq!(RealPacking::from_title("x[0,0,16]", 0), RealPacking::Float);
        // 32768 / 65536 + 0 = 0.5
        let r = RealPacking::Ranged {
            min: 0.0,
            factor: 65536.0,
        };
        assert_eq!(r.decode(&32768u32.to_be_bytes()), 0.5);
        // Truncated: 1.5f = 0x3FC00000: exponent byte 0x7F, mantissa 0x400000 >> 11 = 0x800.
        assert_eq!(RealPacking::Truncated(12).decode(&[0x7F, 0x08, 0x00]), 1.5);
        assert_eq!(RealPacking::Truncated(12).decode(&[0x7F, 0x28, 0x00]), -1.5);
    }
}
