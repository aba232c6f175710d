//! The Arrow type of each field (ARCHITECTURE.md's mapping table). Every Arrow field
//! carries the RNTuple C++ type name in its metadata under [`TYPE_NAME_KEY`], so front
//! ends can tell a pair from a struct or a bitset from an array of bools.

use super::{Descriptor, FieldKind, PrimitiveType};
use crate::error::{Error, Result};
use arrow_schema::{DataType, Field, Fields, UnionFields, UnionMode};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::TYPE_NAME_KEY;

/// The Arrow type of a primitive.
pub fn primitive_data_type(p: PrimitiveType) -> DataType {
    match p {
        PrimitiveType::Bool => DataType::Boolean,
        PrimitiveType::Char | PrimitiveType::Int8 => DataType::Int8,
        PrimitiveType::Byte | PrimitiveType::UInt8 => DataType::UInt8,
        PrimitiveType::Int16 => DataType::Int16,
        PrimitiveType::UInt16 => DataType::UInt16,
        PrimitiveType::Int32 => DataType::Int32,
        PrimitiveType::UInt32 => DataType::UInt32,
        PrimitiveType::Int64 => DataType::Int64,
        PrimitiveType::UInt64 => DataType::UInt64,
        PrimitiveType::Float32 => DataType::Float32,
        PrimitiveType::Float64 => DataType::Float64,
    }
}

/// The primitive an Arrow type holds (the inverse of [`primitive_data_type`], `Int8`
/// read as `std::int8_t` and `UInt8` as `std::uint8_t`).
pub fn primitive_of_data_type(data_type: &DataType) -> Option<PrimitiveType> {
    Some(match data_type {
        DataType::Boolean => PrimitiveType::Bool,
        DataType::Int8 => PrimitiveType::Int8,
        DataType::UInt8 => PrimitiveType::UInt8,
        DataType::Int16 => PrimitiveType::Int16,
        DataType::UInt16 => PrimitiveType::UInt16,
        DataType::Int32 => PrimitiveType::Int32,
        DataType::UInt32 => PrimitiveType::UInt32,
        DataType::Int64 => PrimitiveType::Int64,
        DataType::UInt64 => PrimitiveType::UInt64,
        DataType::Float32 => PrimitiveType::Float32,
        DataType::Float64 => PrimitiveType::Float64,
        _ => return None,
    })
}

fn with_type(field: Field, type_name: &str) -> Field {
    let mut md = HashMap::new();
    md.insert(TYPE_NAME_KEY.to_string(), type_name.to_string());
    field.with_metadata(md)
}

/// The Arrow field for RNTuple field `id`, named `name`.
pub fn arrow_field(desc: &Descriptor, id: u32, name: &str) -> Result<Field> {
    arrow_field_kept(desc, id, name, None)
}

/// The Arrow field for RNTuple field `id`, named `name`, with only the record members
/// in `keep` (every member when `None`): the shape of a projection such as `Jet.pt` of a
/// collection of records.
pub fn arrow_field_kept(
    desc: &Descriptor,
    id: u32,
    name: &str,
    keep: Option<&HashSet<u32>>,
) -> Result<Field> {
    let f = desc.field(id);
    let mut type_name = f.type_name();
    let (data_type, nullable) = match desc.field_kind(id) {
        FieldKind::Primitive(p) => (primitive_data_type(p), false),
        FieldKind::String => (DataType::LargeUtf8, false),
        FieldKind::List(child) => {
            let item = arrow_field_kept(desc, child, desc.field(child).name(), keep)?;
            (DataType::LargeList(Arc::new(item)), false)
        }
        FieldKind::Map(child) => {
            let pair = desc.field(child);
            let [k, v] = pair.children.as_slice() else {
                return Err(Error::corrupt(
                    "schema",
                    format!(
                        "map item of field \"{}\" is not a pair",
                        desc.qualified_name(id)
                    ),
                ));
            };
            let key = arrow_field_kept(desc, *k, "key", keep)?;
            let value = arrow_field_kept(desc, *v, "value", keep)?;
            let entries = with_type(
                Field::new(
                    "entries",
                    DataType::Struct(Fields::from(vec![key, value])),
                    false,
                ),
                pair.type_name(),
            );
            (DataType::Map(Arc::new(entries), false), false)
        }
        FieldKind::Optional(child) => {
            let inner = arrow_field_kept(desc, child, name, keep)?;
            (inner.data_type().clone(), true)
        }
        FieldKind::Record(_, children) => {
            let fields = children
                .iter()
                .filter(|c| keep.is_none_or(|k| k.contains(c)))
                .map(|&c| arrow_field_kept(desc, c, desc.field(c).name(), keep))
                .collect::<Result<Vec<_>>>()?;
            if fields.len() < children.len() {
                // Some members only: no longer that C++ type, an untyped record.
                type_name = "";
            }
            (DataType::Struct(Fields::from(fields)), false)
        }
        FieldKind::Array(child, n) => {
            let item = arrow_field_kept(desc, child, desc.field(child).name(), keep)?;
            (
                DataType::FixedSizeList(Arc::new(item), fixed_size(n, desc, id)?),
                false,
            )
        }
        FieldKind::Bitset(n) => {
            let item = Field::new("_0", DataType::Boolean, false);
            (
                DataType::FixedSizeList(Arc::new(item), fixed_size(n, desc, id)?),
                false,
            )
        }
        FieldKind::Variant(children) => {
            if children.len() > 125 {
                return Err(Error::corrupt(
                    "schema",
                    format!(
                        "variant \"{}\" has more than 125 alternatives",
                        desc.qualified_name(id)
                    ),
                ));
            }
            let fields = children
                .iter()
                .map(|&c| {
                    Ok(arrow_field_kept(desc, c, desc.field(c).name(), keep)?.with_nullable(true))
                })
                .collect::<Result<Vec<_>>>()?;
            // At most 125 alternatives (checked above): the ids 0, 1, ... fit an i8.
            let ids: Vec<i8> = (0..=i8::MAX).take(fields.len()).collect();
            let union_fields = UnionFields::try_new(ids, fields)?;
            // Nullable: a variant in the invalid state (no alternative) is a null.
            (DataType::Union(union_fields, UnionMode::Dense), true)
        }
        FieldKind::Wrapper(child) => {
            let inner = arrow_field_kept(desc, child, name, keep)?;
            (inner.data_type().clone(), inner.is_nullable())
        }
        FieldKind::Cardinality(wide) => (
            if wide {
                DataType::UInt64
            } else {
                DataType::UInt32
            },
            false,
        ),
        FieldKind::Streamer => (DataType::LargeBinary, false),
        FieldKind::Unknown(why) => {
            return Err(Error::Unsupported(format!(
                "field \"{}\": {why}",
                desc.qualified_name(id)
            )))
        }
    };
    Ok(with_type(Field::new(name, data_type, nullable), type_name))
}

fn fixed_size(n: u64, desc: &Descriptor, id: u32) -> Result<i32> {
    i32::try_from(n).map_err(|_| {
        Error::corrupt(
            "schema",
            format!(
                "array size {n} of field \"{}\" is too large",
                desc.qualified_name(id)
            ),
        )
    })
}
