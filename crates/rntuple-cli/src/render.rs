//! Renders entries as JSON with the conventions of the conformance suite (see
//! shared/conformance/README.md): floats as C99 hex strings, maps as objects keyed by
//! the key, pairs and tuples as lists, optionals as value or null, variants as the
//! active value, bitsets as strings of 0/1 with the most significant bit first.

use crate::hexfloat::format_hex_double;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_schema::{DataType, Field};
use rntuple::read::TYPE_NAME_KEY;
use serde_json::{Map, Number, Value};

/// The C++ type name of the values of `field`: optionals, `std::unique_ptr`s and atomics
/// share the Arrow field of their item, so their wrappers are stripped.
pub fn type_name(field: &Field) -> &str {
    let mut t = field
        .metadata()
        .get(TYPE_NAME_KEY)
        .map(String::as_str)
        .unwrap_or("");
    while let Some(inner) = ["std::optional<", "std::unique_ptr<", "std::atomic<"]
        .iter()
        .find_map(|p| t.strip_prefix(p).and_then(|r| r.strip_suffix('>')))
    {
        t = inner;
    }
    t
}

/// One entry (row) of a batch as a JSON object keyed by field name, in schema order.
pub fn render_row(batch: &RecordBatch, row: usize) -> Value {
    let mut obj = Map::new();
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        obj.insert(
            field.name().clone(),
            render_value(field, column.as_ref(), row),
        );
    }
    Value::Object(obj)
}

/// One value of an Arrow array taken apart one level, with what it holds: the walk that
/// both the JSON renderer ([`render_value`]) and `rntuple show` follow.
pub enum Node<'a> {
    /// No value: an empty optional or `std::unique_ptr`, a valueless variant.
    Null,
    /// A `bool`.
    Bool(bool),
    /// A signed integer (also `char` and signed enums).
    Int(i64),
    /// An unsigned integer (also `std::byte`, unsigned enums, cardinalities).
    UInt(u64),
    /// A `float`.
    Float32(f32),
    /// A `double`.
    Float64(f64),
    /// A `std::string`.
    Str(&'a str),
    /// Raw bytes: an object a streamer field stores.
    Bytes(&'a [u8]),
    /// A `std::bitset`'s bits as `0`/`1`, the most significant first.
    Bits(String),
    /// A sequence (vector, set, array, ...): every value of the array, each described by
    /// the item field.
    List(&'a Field, ArrayRef),
    /// A record's members in order, each the value at `row` of its array; `positional`
    /// for pairs and tuples.
    Record {
        /// Each member's field and array.
        members: Vec<(&'a Field, &'a ArrayRef)>,
        /// The row of every member's array.
        row: usize,
        /// Whether the members are positional (`std::pair`, `std::tuple`).
        positional: bool,
    },
    /// A map's entries: the key and value fields, and one row per entry of `entries`
    /// (its column 0 the keys, column 1 the values).
    Map {
        /// The key's field.
        key: &'a Field,
        /// The value's field.
        value: &'a Field,
        /// The entries.
        entries: StructArray,
    },
    /// A variant's active alternative: its field, its array and the row in it.
    Variant(&'a Field, &'a ArrayRef, usize),
    /// A value of an Arrow type the reader does not produce.
    Unsupported(&'a DataType),
}

/// The value at `row` of `array`, whose Arrow field is `field`, taken apart one level.
pub fn node<'a>(field: &'a Field, array: &'a dyn Array, row: usize) -> Node<'a> {
    if array.is_null(row) {
        return Node::Null;
    }
    match array.data_type() {
        DataType::Boolean => Node::Bool(array.as_boolean().value(row)),
        DataType::Int8 => Node::Int(array.as_primitive::<Int8Type>().value(row).into()),
        DataType::Int16 => Node::Int(array.as_primitive::<Int16Type>().value(row).into()),
        DataType::Int32 => Node::Int(array.as_primitive::<Int32Type>().value(row).into()),
        DataType::Int64 => Node::Int(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => Node::UInt(array.as_primitive::<UInt8Type>().value(row).into()),
        DataType::UInt16 => Node::UInt(array.as_primitive::<UInt16Type>().value(row).into()),
        DataType::UInt32 => Node::UInt(array.as_primitive::<UInt32Type>().value(row).into()),
        DataType::UInt64 => Node::UInt(array.as_primitive::<UInt64Type>().value(row)),
        DataType::Float32 => Node::Float32(array.as_primitive::<Float32Type>().value(row)),
        DataType::Float64 => Node::Float64(array.as_primitive::<Float64Type>().value(row)),
        DataType::LargeUtf8 => Node::Str(array.as_string::<i64>().value(row)),
        DataType::LargeBinary => Node::Bytes(array.as_binary::<i64>().value(row)),
        DataType::LargeList(item) => Node::List(item, array.as_list::<i64>().value(row)),
        DataType::FixedSizeList(item, _) => {
            let values = array.as_fixed_size_list().value(row);
            if type_name(field).starts_with("std::bitset<") {
                let bits = values.as_boolean();
                // Bit 0 is stored first; std::bitset::to_string() puts it last.
                Node::Bits(
                    (0..bits.len())
                        .rev()
                        .map(|i| if bits.value(i) { '1' } else { '0' })
                        .collect(),
                )
            } else {
                Node::List(item, values)
            }
        }
        DataType::Struct(children) => {
            let t = type_name(field);
            Node::Record {
                members: children
                    .iter()
                    .map(|f| f.as_ref())
                    .zip(array.as_struct().columns())
                    .collect(),
                row,
                positional: t.starts_with("std::pair<") || t.starts_with("std::tuple<"),
            }
        }
        DataType::Map(entries_field, _) => match entries_field.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => Node::Map {
                key: &kv[0],
                value: &kv[1],
                entries: array.as_map().value(row),
            },
            _ => Node::Null,
        },
        DataType::Union(fields, _) => {
            let u = array.as_union();
            let type_id = u.type_id(row);
            match fields.iter().find(|(id, _)| *id == type_id) {
                Some((_, f)) => Node::Variant(f, u.child(type_id), u.value_offset(row)),
                None => Node::Null,
            }
        }
        other => Node::Unsupported(other),
    }
}

/// The value at `row` of `array`, whose Arrow field is `field`.
pub fn render_value(field: &Field, array: &dyn Array, row: usize) -> Value {
    let list = |item: &Field, values: &dyn Array| {
        Value::Array(
            (0..values.len())
                .map(|i| render_value(item, values, i))
                .collect(),
        )
    };
    match node(field, array, row) {
        Node::Null => Value::Null,
        // The suite renders bools as the numbers 0 and 1, like C++ streams do.
        Node::Bool(b) => Value::from(u8::from(b)),
        Node::Int(i) => Value::from(i),
        Node::UInt(u) => Value::Number(Number::from(u)),
        Node::Float32(x) => Value::String(format_hex_double(f64::from(x))),
        Node::Float64(x) => Value::String(format_hex_double(x)),
        Node::Str(s) => Value::String(s.to_string()),
        Node::Bytes(bytes) => Value::Array(bytes.iter().map(|&b| Value::from(b)).collect()),
        Node::Bits(text) => Value::String(text),
        Node::List(item, values) => list(item, values.as_ref()),
        Node::Record {
            members,
            row,
            positional,
        } => {
            if positional {
                Value::Array(
                    members
                        .iter()
                        .map(|(f, c)| render_value(f, c.as_ref(), row))
                        .collect(),
                )
            } else {
                let mut obj = Map::new();
                for (f, c) in members {
                    obj.insert(f.name().clone(), render_value(f, c.as_ref(), row));
                }
                Value::Object(obj)
            }
        }
        Node::Map {
            key,
            value,
            entries,
        } => {
            let mut obj = Map::new();
            for i in 0..entries.len() {
                let k = match render_value(key, entries.column(0).as_ref(), i) {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                obj.insert(k, render_value(value, entries.column(1).as_ref(), i));
            }
            Value::Object(obj)
        }
        Node::Variant(f, child, offset) => render_value(f, child.as_ref(), offset),
        Node::Unsupported(other) => Value::String(format!("<unsupported Arrow type {other}>")),
    }
}

/// The entries of an attribute set (ROOT's attribute RNTuple schema 1.x: fields
/// `_rangeStart`, `_rangeLen` and the record `_userData`), each as
/// `{"Value": ..., "Range": [first, last]}`, ordered by range start as ROOT lists them.
/// `Value` is the single attribute field's value, or an object of all of them; an empty
/// range renders as `null`.
pub fn attribute_entries(
    attrs: &rntuple::read::RNTupleReader,
) -> Result<Vec<Value>, rntuple::Error> {
    let names = ["_rangeStart", "_rangeLen", "_userData"].map(String::from);
    let batch = attrs.read(Some(&names), 0..attrs.num_entries())?;
    let starts = batch.column(0).as_primitive::<UInt64Type>();
    let lens = batch.column(1).as_primitive::<UInt64Type>();
    let schema = batch.schema();
    let user_field = schema.field(2);
    let user = batch.column(2).as_struct();
    let mut order: Vec<usize> = (0..batch.num_rows()).collect();
    order.sort_by_key(|&i| starts.value(i));
    let mut entries = Vec::with_capacity(order.len());
    for i in order {
        let value = match render_value(user_field, user, i) {
            Value::Object(m) if m.len() == 1 => {
                m.into_iter().next().map(|(_, v)| v).unwrap_or(Value::Null)
            }
            other => other,
        };
        let (start, len) = (starts.value(i), lens.value(i));
        let range = if len == 0 {
            Value::Null
        } else {
            Value::Array(vec![Value::from(start), Value::from(start + len - 1)])
        };
        let mut obj = Map::new();
        obj.insert("Value".into(), value);
        obj.insert("Range".into(), range);
        entries.push(Value::Object(obj));
    }
    Ok(entries)
}

/// Writes the entries of an attribute set ([`attribute_entries`]) as a JSON list.
pub fn dump_attributes(
    out: &mut impl std::io::Write,
    attrs: &rntuple::read::RNTupleReader,
) -> Result<(), rntuple::Error> {
    let entries = attribute_entries(attrs)?;
    let text = serde_json::to_string_pretty(&Value::Array(entries))
        .map_err(|e| rntuple::Error::InvalidArgument(format!("cannot render JSON: {e}")))?;
    writeln!(out, "{text}").map_err(|source| rntuple::Error::Io {
        what: "standard output".into(),
        source,
    })
}
