//! What a field is, from its role, type name, flags and subfields: the meaning the
//! reader gives to its columns.

use super::descriptor::{Descriptor, FieldRole};
use crate::encoding::ColumnType;

/// A fundamental C++ type of a leaf field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrimitiveType {
    /// `bool`
    Bool,
    /// `char`
    Char,
    /// `std::byte`
    Byte,
    /// `std::int8_t`
    Int8,
    /// `std::uint8_t`
    UInt8,
    /// `std::int16_t`
    Int16,
    /// `std::uint16_t`
    UInt16,
    /// `std::int32_t`
    Int32,
    /// `std::uint32_t`
    UInt32,
    /// `std::int64_t`
    Int64,
    /// `std::uint64_t`
    UInt64,
    /// `float`
    Float32,
    /// `double` (also `Double32_t`)
    Float64,
}

impl PrimitiveType {
    /// The primitive type of a normalized C++ type name, if it is one.
    pub fn from_type_name(name: &str) -> Option<Self> {
        Some(match name {
            "bool" => PrimitiveType::Bool,
            "char" => PrimitiveType::Char,
            "std::byte" => PrimitiveType::Byte,
            "std::int8_t" => PrimitiveType::Int8,
            "std::uint8_t" => PrimitiveType::UInt8,
            "std::int16_t" => PrimitiveType::Int16,
            "std::uint16_t" => PrimitiveType::UInt16,
            "std::int32_t" => PrimitiveType::Int32,
            "std::uint32_t" => PrimitiveType::UInt32,
            "std::int64_t" => PrimitiveType::Int64,
            "std::uint64_t" => PrimitiveType::UInt64,
            "float" => PrimitiveType::Float32,
            "double" | "Double32_t" => PrimitiveType::Float64,
            _ => return None,
        })
    }

    /// The normalized C++ type name (the inverse of [`PrimitiveType::from_type_name`]).
    pub fn type_name(self) -> &'static str {
        match self {
            PrimitiveType::Bool => "bool",
            PrimitiveType::Char => "char",
            PrimitiveType::Byte => "std::byte",
            PrimitiveType::Int8 => "std::int8_t",
            PrimitiveType::UInt8 => "std::uint8_t",
            PrimitiveType::Int16 => "std::int16_t",
            PrimitiveType::UInt16 => "std::uint16_t",
            PrimitiveType::Int32 => "std::int32_t",
            PrimitiveType::UInt32 => "std::uint32_t",
            PrimitiveType::Int64 => "std::int64_t",
            PrimitiveType::UInt64 => "std::uint64_t",
            PrimitiveType::Float32 => "float",
            PrimitiveType::Float64 => "double",
        }
    }
}

/// How a record's members render: a class by member names, a pair or tuple by position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordStyle {
    /// A user class or struct (members by name, bases as `:_0`, ...).
    Class,
    /// `std::pair`.
    Pair,
    /// `std::tuple`.
    Tuple,
    /// A record without a type name.
    Untyped,
}

/// The meaning of a field.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// A fundamental type in one column.
    Primitive(PrimitiveType),
    /// `std::string`: an index column and a char column.
    String,
    /// A sequence: vector, RVec, the set family, untyped and proxied collections.
    List(u32),
    /// The map family; the child is the `std::pair<K,V>` field.
    Map(u32),
    /// `std::optional` / `std::unique_ptr`: a collection of zero or one element.
    Optional(u32),
    /// A record of subfields.
    Record(RecordStyle, Vec<u32>),
    /// `std::array<T,N>` and C arrays: a repetitive field without columns.
    Array(u32, u64),
    /// `std::bitset<N>`: a repetitive leaf with a Bit column.
    Bitset(u64),
    /// `std::variant<...>`: a Switch column and one subfield per alternative.
    Variant(Vec<u32>),
    /// A leaf without columns standing for its only subfield (enums, `std::atomic`).
    Wrapper(u32),
    /// `ROOT::RNTupleCardinality<T>`: a collection's sizes, 32 or 64 bits wide.
    Cardinality(bool),
    /// An object serialized by ROOT's streamer: raw bytes.
    Streamer,
    /// Something this reader does not understand; the reason says what.
    Unknown(String),
}

/// The map templates: a collection of `std::pair<Key, Value>` read as a map.
const MAP_TEMPLATES: [&str; 4] = [
    "std::map",
    "std::unordered_map",
    "std::multimap",
    "std::unordered_multimap",
];

/// Whether `template` (a type name without its arguments) is a map template.
pub(crate) fn is_map_template(template: &str) -> bool {
    MAP_TEMPLATES.contains(&template)
}

/// Whether a type name is a pair or tuple (rendered positionally).
fn record_style(type_name: &str) -> RecordStyle {
    if type_name.is_empty() {
        RecordStyle::Untyped
    } else if type_name.starts_with("std::pair<") {
        RecordStyle::Pair
    } else if type_name.starts_with("std::tuple<") {
        RecordStyle::Tuple
    } else {
        RecordStyle::Class
    }
}

impl Descriptor {
    /// The meaning of field `id`, from its role, type name, flags and subfields.
    pub fn field_kind(&self, id: u32) -> FieldKind {
        let f = self.field(id);
        let t = f.type_name();
        let only_child = || match f.children.as_slice() {
            [c] => Some(*c),
            _ => None,
        };
        let unknown = |why: &str| FieldKind::Unknown(format!("{why} (type \"{t}\")"));
        match f.role {
            FieldRole::Leaf => {
                if let Some(n) = f.record.array_size {
                    if t.starts_with("std::bitset<") {
                        return FieldKind::Bitset(n);
                    }
                    // Repetitive leaf without columns: a fixed-size array.
                    return match (only_child(), f.columns.is_empty()) {
                        (Some(c), true) => FieldKind::Array(c, n),
                        _ => unknown("repetitive field with an unexpected structure"),
                    };
                }
                if let Some(p) = PrimitiveType::from_type_name(t) {
                    return FieldKind::Primitive(p);
                }
                if t == "std::string" {
                    return FieldKind::String;
                }
                if let Some(rest) = t.strip_prefix("ROOT::RNTupleCardinality<") {
                    return match rest {
                        "std::uint32_t>" => FieldKind::Cardinality(false),
                        "std::uint64_t>" => FieldKind::Cardinality(true),
                        _ => unknown("cardinality of an unsupported size type"),
                    };
                }
                match (only_child(), f.columns.is_empty()) {
                    (Some(c), true) => FieldKind::Wrapper(c),
                    _ => unknown("unknown leaf type"),
                }
            }
            FieldRole::Collection => {
                let Some(child) = only_child() else {
                    return unknown("collection without exactly one subfield");
                };
                if t.split_once('<')
                    .is_some_and(|(head, _)| is_map_template(head))
                {
                    FieldKind::Map(child)
                } else if t.starts_with("std::optional<") || t.starts_with("std::unique_ptr<") {
                    FieldKind::Optional(child)
                } else {
                    // Vectors, sets, untyped collections and proxied user collections
                    // share the vector's representation.
                    FieldKind::List(child)
                }
            }
            FieldRole::Record => FieldKind::Record(record_style(t), f.children.clone()),
            FieldRole::Variant => FieldKind::Variant(f.children.clone()),
            FieldRole::Streamer => FieldKind::Streamer,
            FieldRole::Unknown(r) => unknown(&format!("unknown structural role {r}")),
        }
    }

    /// Elements each entry appends to field `id`'s principal column: `Some(k)` outside
    /// collections and variants (the product of the array sizes above it, times the bits
    /// of a bitset), `None` inside them (it depends on the items).
    pub fn elements_per_entry(&self, id: u32) -> Option<u64> {
        let mut mult = 1u64;
        let mut cur = id;
        while let Some(parent) = self.field(cur).parent {
            match self.field_kind(parent) {
                FieldKind::Record(..) | FieldKind::Wrapper(_) => {}
                FieldKind::Array(_, n) => mult = mult.checked_mul(n)?,
                _ => return None,
            }
            cur = parent;
        }
        if let FieldKind::Bitset(n) = self.field_kind(id) {
            mult = mult.checked_mul(n)?;
        }
        Some(mult)
    }

    /// Why field `id` or any of its subfields cannot be read, if so: an unknown role or
    /// type, or a column of a type this reader does not know.
    pub fn unreadable_reason(&self, id: u32) -> Option<String> {
        let kind = self.field_kind(id);
        if let FieldKind::Unknown(why) = kind {
            return Some(format!("field \"{}\": {why}", self.qualified_name(id)));
        }
        for &col in &self.field(id).columns {
            let code = self.column(col).record.column_type;
            if ColumnType::from_u16(code).is_none() {
                return Some(format!(
                    "field \"{}\": column {col} has unknown column type {code:#x}",
                    self.qualified_name(id)
                ));
            }
        }
        self.field(id)
            .children
            .iter()
            .find_map(|&c| self.unreadable_reason(c))
    }
}
