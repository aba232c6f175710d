//! Leaf values as Arrow: the fundamental types a `TLeaf` holds, big-endian in baskets.

use super::meta::Leaf;
use crate::error::{Error, Result};
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{ArrayRef, BooleanArray, PrimitiveArray};
use arrow_buffer::ScalarBuffer;
use std::sync::Arc;

/// The type of a leaf's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// `Double32_t` (`/d`) without a range: a float on disk, a double in memory.
    Double32,
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
            "TLeafD32" => LeafType::Double32,
            "TLeafC" => LeafType::CString,
            _ => return None,
        })
    }

    /// Bytes per value in a basket (0 for C strings, whose size varies).
    pub fn disk_size(self) -> usize {
        match self {
            LeafType::Bool | LeafType::Char | LeafType::UChar => 1,
            LeafType::Short | LeafType::UShort => 2,
            LeafType::Int | LeafType::UInt | LeafType::Float | LeafType::Double32 => 4,
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
            LeafType::Double32 => "Double32_t",
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
        macro_rules! be {
            ($arrow:ty, $native:ty, $n:literal) => {{
                let values: Vec<$native> = bytes
                    .chunks_exact($n)
                    .map(|c| {
                        let mut a = [0u8; $n];
                        a.copy_from_slice(c);
                        <$native>::from_be_bytes(a)
                    })
                    .collect();
                Arc::new(PrimitiveArray::<$arrow>::new(
                    ScalarBuffer::from(values),
                    None,
                )) as ArrayRef
            }};
        }
        Ok(match self {
            LeafType::Bool => {
                Arc::new(BooleanArray::from_iter(bytes.iter().map(|&b| Some(b != 0))))
            }
            LeafType::Char => be!(Int8Type, i8, 1),
            LeafType::UChar => be!(UInt8Type, u8, 1),
            LeafType::Short => be!(Int16Type, i16, 2),
            LeafType::UShort => be!(UInt16Type, u16, 2),
            LeafType::Int => be!(Int32Type, i32, 4),
            LeafType::UInt => be!(UInt32Type, u32, 4),
            LeafType::Long64 => be!(Int64Type, i64, 8),
            LeafType::ULong64 => be!(UInt64Type, u64, 8),
            LeafType::Float => be!(Float32Type, f32, 4),
            LeafType::Double => be!(Float64Type, f64, 8),
            LeafType::Double32 => {
                let values: Vec<f64> = bytes
                    .chunks_exact(4)
                    .map(|c| f64::from(f32::from_be_bytes([c[0], c[1], c[2], c[3]])))
                    .collect();
                Arc::new(PrimitiveArray::<Float64Type>::new(
                    ScalarBuffer::from(values),
                    None,
                ))
            }
            LeafType::CString => unreachable_c_string(what)?,
        })
    }
}

fn unreachable_c_string(what: &str) -> Result<ArrayRef> {
    Err(Error::InvalidArgument(format!(
        "{what}: C strings are decoded entry by entry"
    )))
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
        let a = LeafType::Double32
            .decode(&1.5f32.to_be_bytes(), "x")
            .unwrap();
        assert_eq!(a.as_primitive::<Float64Type>().values(), &[1.5]);
        let err = LeafType::Short.decode(&[1, 2, 3], "x").unwrap_err();
        assert!(err.to_string().contains("whole values"), "{err}");
    }
}
