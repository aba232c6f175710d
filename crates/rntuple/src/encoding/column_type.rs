//! The column types of the specification's table (codes 0x00-0x1D) and their widths.

use std::fmt;

use crate::error::{Error, Result};

/// An on-disk column type, with the code the header stores for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u16)]
pub enum ColumnType {
    /// 0x00: booleans, bit-packed LSB-first.
    Bit = 0x00,
    /// 0x01: uninterpreted byte.
    Byte = 0x01,
    /// 0x02: ASCII character.
    Char = 0x02,
    /// 0x03: 1-byte signed integer.
    Int8 = 0x03,
    /// 0x04: 1-byte unsigned integer.
    UInt8 = 0x04,
    /// 0x05: little-endian 2-byte signed integer.
    Int16 = 0x05,
    /// 0x06: little-endian 2-byte unsigned integer.
    UInt16 = 0x06,
    /// 0x07: little-endian 4-byte signed integer.
    Int32 = 0x07,
    /// 0x08: little-endian 4-byte unsigned integer.
    UInt32 = 0x08,
    /// 0x09: little-endian 8-byte signed integer.
    Int64 = 0x09,
    /// 0x0A: little-endian 8-byte unsigned integer.
    UInt64 = 0x0A,
    /// 0x0B: IEEE-754 half precision float.
    Real16 = 0x0B,
    /// 0x0C: IEEE-754 single precision float.
    Real32 = 0x0C,
    /// 0x0D: IEEE-754 double precision float.
    Real64 = 0x0D,
    /// 0x0E: 32-bit collection end offsets, relative to the cluster.
    Index32 = 0x0E,
    /// 0x0F: 64-bit collection end offsets, relative to the cluster.
    Index64 = 0x0F,
    /// 0x10: 64-bit index followed by a 32-bit dispatch tag (12 bytes).
    Switch = 0x10,
    /// 0x11: Int16 in split + zigzag encoding.
    SplitInt16 = 0x11,
    /// 0x12: UInt16 in split encoding.
    SplitUInt16 = 0x12,
    /// 0x13: Int32 in split + zigzag encoding.
    SplitInt32 = 0x13,
    /// 0x14: UInt32 in split encoding.
    SplitUInt32 = 0x14,
    /// 0x15: Int64 in split + zigzag encoding.
    SplitInt64 = 0x15,
    /// 0x16: UInt64 in split encoding.
    SplitUInt64 = 0x16,
    /// 0x17: Real16 in split encoding.
    SplitReal16 = 0x17,
    /// 0x18: Real32 in split encoding.
    SplitReal32 = 0x18,
    /// 0x19: Real64 in split encoding.
    SplitReal64 = 0x19,
    /// 0x1A: Index32 in split + delta encoding.
    SplitIndex32 = 0x1A,
    /// 0x1B: Index64 in split + delta encoding.
    SplitIndex64 = 0x1B,
    /// 0x1C: float32 keeping only its top 10-31 bits, bit-packed.
    Real32Trunc = 0x1C,
    /// 0x1D: real in a stated range, quantized to 1-32 bit unsigned integers, bit-packed.
    Real32Quant = 0x1D,
}

impl ColumnType {
    /// Every column type, in code order.
    pub const ALL: [ColumnType; 30] = [
        ColumnType::Bit,
        ColumnType::Byte,
        ColumnType::Char,
        ColumnType::Int8,
        ColumnType::UInt8,
        ColumnType::Int16,
        ColumnType::UInt16,
        ColumnType::Int32,
        ColumnType::UInt32,
        ColumnType::Int64,
        ColumnType::UInt64,
        ColumnType::Real16,
        ColumnType::Real32,
        ColumnType::Real64,
        ColumnType::Index32,
        ColumnType::Index64,
        ColumnType::Switch,
        ColumnType::SplitInt16,
        ColumnType::SplitUInt16,
        ColumnType::SplitInt32,
        ColumnType::SplitUInt32,
        ColumnType::SplitInt64,
        ColumnType::SplitUInt64,
        ColumnType::SplitReal16,
        ColumnType::SplitReal32,
        ColumnType::SplitReal64,
        ColumnType::SplitIndex32,
        ColumnType::SplitIndex64,
        ColumnType::Real32Trunc,
        ColumnType::Real32Quant,
    ];

    /// The column type with the on-disk code `code`; `None` for codes this reader does not know
    /// (the caller skips fields made of such columns, as the specification asks).
    pub fn from_u16(code: u16) -> Option<ColumnType> {
        ColumnType::ALL.get(usize::from(code)).copied()
    }

    /// The on-disk code.
    pub fn as_u16(self) -> u16 {
        self as u16
    }

    /// The specification's name: "Bit", "SplitInt32", "Real32Quant", ...
    pub fn name(self) -> &'static str {
        use ColumnType::*;
        match self {
            Bit => "Bit",
            Byte => "Byte",
            Char => "Char",
            Int8 => "Int8",
            UInt8 => "UInt8",
            Int16 => "Int16",
            UInt16 => "UInt16",
            Int32 => "Int32",
            UInt32 => "UInt32",
            Int64 => "Int64",
            UInt64 => "UInt64",
            Real16 => "Real16",
            Real32 => "Real32",
            Real64 => "Real64",
            Index32 => "Index32",
            Index64 => "Index64",
            Switch => "Switch",
            SplitInt16 => "SplitInt16",
            SplitUInt16 => "SplitUInt16",
            SplitInt32 => "SplitInt32",
            SplitUInt32 => "SplitUInt32",
            SplitInt64 => "SplitInt64",
            SplitUInt64 => "SplitUInt64",
            SplitReal16 => "SplitReal16",
            SplitReal32 => "SplitReal32",
            SplitReal64 => "SplitReal64",
            SplitIndex32 => "SplitIndex32",
            SplitIndex64 => "SplitIndex64",
            Real32Trunc => "Real32Trunc",
            Real32Quant => "Real32Quant",
        }
    }

    /// The inclusive range of valid bits-on-storage values: (10, 31) for Real32Trunc,
    /// (1, 32) for Real32Quant, and (w, w) with the table's width w for all others.
    pub fn bits_range(self) -> (u16, u16) {
        use ColumnType::*;
        match self {
            Bit => (1, 1),
            Byte | Char | Int8 | UInt8 => (8, 8),
            Int16 | UInt16 | Real16 | SplitInt16 | SplitUInt16 | SplitReal16 => (16, 16),
            Int32 | UInt32 | Real32 | Index32 | SplitInt32 | SplitUInt32 | SplitReal32
            | SplitIndex32 => (32, 32),
            Int64 | UInt64 | Real64 | Index64 | SplitInt64 | SplitUInt64 | SplitReal64
            | SplitIndex64 => (64, 64),
            Switch => (96, 96),
            Real32Trunc => (10, 31),
            Real32Quant => (1, 32),
        }
    }

    /// The fixed bits on storage of the type, or `None` for the variable-width types
    /// (Real32Trunc, Real32Quant), whose width the column record states.
    pub fn fixed_bits(self) -> Option<u16> {
        let (lo, hi) = self.bits_range();
        (lo == hi).then_some(lo)
    }

    /// The default bits on storage: the fixed width, or the largest valid width of the
    /// variable-width types (31 for Real32Trunc, 32 for Real32Quant).
    pub fn default_bits(self) -> u16 {
        self.bits_range().1
    }

    /// Checks a stated bits-on-storage value against the type.
    pub fn validate_bits(self, bits: u16) -> Result<()> {
        let (lo, hi) = self.bits_range();
        if (lo..=hi).contains(&bits) {
            Ok(())
        } else if lo == hi {
            Err(Error::corrupt(
                "column description",
                format!("column type {self} has {bits} bits on storage, must be {lo}"),
            ))
        } else {
            Err(Error::corrupt(
                "column description",
                format!("column type {self} has {bits} bits on storage, must be {lo} to {hi}"),
            ))
        }
    }

    /// Whether pages of this type are split (byte-transposed).
    pub fn is_split(self) -> bool {
        use ColumnType::*;
        matches!(
            self,
            SplitInt16
                | SplitUInt16
                | SplitInt32
                | SplitUInt32
                | SplitInt64
                | SplitUInt64
                | SplitReal16
                | SplitReal32
                | SplitReal64
                | SplitIndex32
                | SplitIndex64
        )
    }

    /// The unsplit type of a split one (`SplitReal32` → `Real32`); any other type itself.
    /// A split and an unsplit type of one kind store the same values.
    pub fn unsplit(self) -> ColumnType {
        use ColumnType::*;
        match self {
            SplitInt16 => Int16,
            SplitUInt16 => UInt16,
            SplitInt32 => Int32,
            SplitUInt32 => UInt32,
            SplitInt64 => Int64,
            SplitUInt64 => UInt64,
            SplitReal16 => Real16,
            SplitReal32 => Real32,
            SplitReal64 => Real64,
            SplitIndex32 => Index32,
            SplitIndex64 => Index64,
            other => other,
        }
    }

    /// Whether this is an index (collection offset) column type.
    pub fn is_index(self) -> bool {
        use ColumnType::*;
        matches!(self, Index32 | Index64 | SplitIndex32 | SplitIndex64)
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
