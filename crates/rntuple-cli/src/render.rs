//! Renders entries as JSON with the conventions of the conformance suite (see
//! shared/conformance/README.md): floats as C99 hex strings, maps as objects keyed by
//! the key, pairs and tuples as lists, optionals as value or null, variants as the
//! active value, bitsets as strings of 0/1 with the most significant bit first.
//!
//! Values render as [`Json`], whose objects keep every member in order: a multimap's
//! repeated keys all appear (`{"a": 1, "a": 2}`), as ROOT prints them.

use crate::hexfloat::format_hex_double;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_schema::{DataType, Field};
use rntuple::read::TYPE_NAME_KEY;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};
use serde_json::{Number, Value};
use std::fmt;
use std::io;

/// A rendered value: JSON as [`Value`] holds it, except that an object is the list of
/// its members, so that a key may repeat (a multimap's). Displays as `serde_json`
/// writes the [`Value`] (`{}` compact, `{:#}` pretty), byte for byte when no key repeats.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`, a number or a string.
    Scalar(Value),
    /// A number written as this text: a float's shortest decimal digits that read
    /// back to the same `float` or `double` (`0.1`, `3.4028235e38`).
    Number(String),
    /// A list.
    Array(Vec<Json>),
    /// An object: its members in order, keys repeated as the data has them.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// Writes the value as `serde_json` writes JSON with the formatter `f` (scalars and
    /// keys as it writes them with any formatter: no formatter changes them).
    fn write<W: io::Write, F: Formatter>(&self, w: &mut W, f: &mut F) -> io::Result<()> {
        match self {
            Json::Scalar(v) => serde_json::to_writer(w, v).map_err(io::Error::from),
            Json::Number(text) => w.write_all(text.as_bytes()),
            Json::Array(items) => {
                f.begin_array(w)?;
                for (i, item) in items.iter().enumerate() {
                    f.begin_array_value(w, i == 0)?;
                    item.write(w, f)?;
                    f.end_array_value(w)?;
                }
                f.end_array(w)
            }
            Json::Object(members) => {
                f.begin_object(w)?;
                for (i, (key, value)) in members.iter().enumerate() {
                    f.begin_object_key(w, i == 0)?;
                    serde_json::to_writer(&mut *w, key)?;
                    f.end_object_key(w)?;
                    f.begin_object_value(w)?;
                    value.write(w, f)?;
                    f.end_object_value(w)?;
                }
                f.end_object(w)
            }
        }
    }
}

impl fmt::Display for Json {
    /// Compact JSON, or with `{:#}` pretty JSON (two spaces an indentation level).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = Vec::new();
        let written = if f.alternate() {
            self.write(&mut text, &mut PrettyFormatter::new())
        } else {
            self.write(&mut text, &mut CompactFormatter)
        };
        written.map_err(|_| fmt::Error)?;
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

impl From<Json> for Value {
    /// The value as a [`Value`]: of a repeated key only the last value stays, at the
    /// place of the first.
    fn from(json: Json) -> Value {
        match json {
            Json::Scalar(v) => v,
            Json::Number(text) => serde_json::from_str(&text).unwrap_or(Value::Null),
            Json::Array(items) => Value::Array(items.into_iter().map(Value::from).collect()),
            Json::Object(members) => Value::Object(
                members
                    .into_iter()
                    .map(|(k, v)| (k, Value::from(v)))
                    .collect(),
            ),
        }
    }
}

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

/// How floats are written: as C99 hex strings (`"0x1.8p+3"`, bit exact, the
/// conformance suite's convention) or as JSON numbers in the shortest decimal that
/// reads back to the same value (`3`, `0.1`; NaN and infinities, which JSON numbers
/// cannot be, as the strings `"nan"`, `"inf"`, `"-inf"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Floats {
    /// C99 hex float strings.
    Hex,
    /// Shortest round-trip decimal numbers.
    Decimal,
}

/// The JSON of a float `x` whose shortest digits `{x:e}` and `{x}` write, as `floats`
/// says.
fn float_json<T>(x: T, as_f64: f64, floats: Floats) -> Json
where
    T: std::fmt::Display + std::fmt::LowerExp,
{
    if floats == Floats::Hex {
        return Json::Scalar(Value::String(format_hex_double(as_f64)));
    }
    if as_f64.is_nan() {
        return Json::Scalar(Value::String("nan".into()));
    }
    if as_f64.is_infinite() {
        let text = if as_f64 > 0.0 { "inf" } else { "-inf" };
        return Json::Scalar(Value::String(text.into()));
    }
    // Rust writes the shortest digits that read back exactly; plain below 1e16 and
    // from 1e-5, else with an exponent (`1e30`), both valid JSON numbers.
    let magnitude = as_f64.abs();
    if magnitude == 0.0 || (1e-5..1e16).contains(&magnitude) {
        Json::Number(x.to_string())
    } else {
        Json::Number(format!("{x:e}"))
    }
}

/// One entry (row) of a batch as a JSON object keyed by field name, in schema order:
/// what `rntuple dump --json` prints.
pub fn json_row(batch: &RecordBatch, row: usize) -> Json {
    json_row_with(batch, row, Floats::Hex)
}

/// [`json_row`] with floats written as `floats` says.
pub fn json_row_with(batch: &RecordBatch, row: usize, floats: Floats) -> Json {
    Json::Object(
        batch
            .schema()
            .fields()
            .iter()
            .zip(batch.columns())
            .map(|(field, column)| {
                (
                    field.name().clone(),
                    json_value_with(field, column.as_ref(), row, floats),
                )
            })
            .collect(),
    )
}

/// [`json_row`] as a [`Value`] (a multimap's repeated keys collapse, see [`Json`]).
pub fn render_row(batch: &RecordBatch, row: usize) -> Value {
    json_row(batch, row).into()
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
pub fn json_value(field: &Field, array: &dyn Array, row: usize) -> Json {
    json_value_with(field, array, row, Floats::Hex)
}

/// [`json_value`] with floats written as `floats` says.
pub fn json_value_with(field: &Field, array: &dyn Array, row: usize, floats: Floats) -> Json {
    let scalar = Json::Scalar;
    let json_value =
        |field: &Field, array: &dyn Array, row: usize| json_value_with(field, array, row, floats);
    match node(field, array, row) {
        Node::Null => scalar(Value::Null),
        // The suite renders bools as the numbers 0 and 1, like C++ streams do.
        Node::Bool(b) => scalar(Value::from(u8::from(b))),
        Node::Int(i) => scalar(Value::from(i)),
        Node::UInt(u) => scalar(Value::Number(Number::from(u))),
        Node::Float32(x) => float_json(x, f64::from(x), floats),
        Node::Float64(x) => float_json(x, x, floats),
        Node::Str(s) => scalar(Value::String(s.to_string())),
        Node::Bytes(bytes) => Json::Array(bytes.iter().map(|&b| scalar(Value::from(b))).collect()),
        Node::Bits(text) => scalar(Value::String(text)),
        Node::List(item, values) => Json::Array(
            (0..values.len())
                .map(|i| json_value(item, values.as_ref(), i))
                .collect(),
        ),
        Node::Record {
            members,
            row,
            positional,
        } => {
            let values = members.iter().map(|(f, c)| json_value(f, c.as_ref(), row));
            if positional {
                Json::Array(values.collect())
            } else {
                Json::Object(
                    members
                        .iter()
                        .map(|(f, _)| f.name().clone())
                        .zip(values)
                        .collect(),
                )
            }
        }
        // Every entry in storage order, a repeated key (a multimap's) included.
        Node::Map {
            key,
            value,
            entries,
        } => Json::Object(
            (0..entries.len())
                .map(|i| {
                    let k = match json_value(key, entries.column(0).as_ref(), i) {
                        Json::Scalar(Value::String(s)) => s,
                        other => other.to_string(),
                    };
                    (k, json_value(value, entries.column(1).as_ref(), i))
                })
                .collect(),
        ),
        Node::Variant(f, child, offset) => json_value(f, child.as_ref(), offset),
        Node::Unsupported(other) => {
            scalar(Value::String(format!("<unsupported Arrow type {other}>")))
        }
    }
}

/// [`json_value`] as a [`Value`] (a multimap's repeated keys collapse, see [`Json`]).
pub fn render_value(field: &Field, array: &dyn Array, row: usize) -> Value {
    json_value(field, array, row).into()
}

/// The entries of an attribute set (ROOT's attribute RNTuple schema 1.x: fields
/// `_rangeStart`, `_rangeLen` and the record `_userData`), each as
/// `{"Value": ..., "Range": [first, last]}`, ordered by range start as ROOT lists them.
/// `Value` is the single attribute field's value, or an object of all of them; an empty
/// range renders as `null`.
pub fn attribute_entries(
    attrs: &rntuple::read::RNTupleReader,
    floats: Floats,
) -> Result<Vec<Json>, rntuple::Error> {
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
        let value = match json_value_with(user_field, user, i, floats) {
            Json::Object(mut m) if m.len() == 1 => {
                m.pop().map_or(Json::Scalar(Value::Null), |(_, v)| v)
            }
            other => other,
        };
        let (start, len) = (starts.value(i), lens.value(i));
        let range = if len == 0 {
            Json::Scalar(Value::Null)
        } else {
            Json::Array(vec![
                Json::Scalar(Value::from(start)),
                Json::Scalar(Value::from(start + len - 1)),
            ])
        };
        entries.push(Json::Object(vec![
            ("Value".into(), value),
            ("Range".into(), range),
        ]));
    }
    Ok(entries)
}

/// Writes the entries of an attribute set ([`attribute_entries`]) as a JSON list.
pub fn dump_attributes(
    out: &mut impl std::io::Write,
    attrs: &rntuple::read::RNTupleReader,
    floats: Floats,
) -> Result<(), rntuple::Error> {
    let entries = attribute_entries(attrs, floats)?;
    writeln!(out, "{:#}", Json::Array(entries)).map_err(|source| {
        rntuple::Error::Io(rntuple_io::Error::Io {
            what: "standard output".into(),
            source,
        })
    })
}
