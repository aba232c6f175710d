//! Renders entries as JSON with the conventions of the conformance suite (see
//! shared/conformance/README.md): floats as C99 hex strings, maps as objects keyed by
//! the key, pairs and tuples as lists, optionals as value or null, variants as the
//! active value, bitsets as strings of 0/1 with the most significant bit first.

use crate::hexfloat::format_hex_double;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Field};
use rntuple::read::TYPE_NAME_KEY;
use serde_json::{Map, Number, Value};

/// The C++ type name of the values of `field`: optionals, `std::unique_ptr`s and atomics
/// share the Arrow field of their item, so their wrappers are stripped.
fn type_name(field: &Field) -> &str {
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

/// The value at `row` of `array`, whose Arrow field is `field`.
pub fn render_value(field: &Field, array: &dyn Array, row: usize) -> Value {
    if array.is_null(row) {
        return Value::Null;
    }
    match array.data_type() {
        // The suite renders bools as the numbers 0 and 1, like C++ streams do.
        DataType::Boolean => Value::from(u8::from(array.as_boolean().value(row))),
        DataType::Int8 => Value::from(array.as_primitive::<Int8Type>().value(row)),
        DataType::Int16 => Value::from(array.as_primitive::<Int16Type>().value(row)),
        DataType::Int32 => Value::from(array.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => Value::from(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => Value::from(array.as_primitive::<UInt8Type>().value(row)),
        DataType::UInt16 => Value::from(array.as_primitive::<UInt16Type>().value(row)),
        DataType::UInt32 => Value::from(array.as_primitive::<UInt32Type>().value(row)),
        DataType::UInt64 => {
            Value::Number(Number::from(array.as_primitive::<UInt64Type>().value(row)))
        }
        DataType::Float32 => Value::String(format_hex_double(
            array.as_primitive::<Float32Type>().value(row) as f64,
        )),
        DataType::Float64 => Value::String(format_hex_double(
            array.as_primitive::<Float64Type>().value(row),
        )),
        DataType::LargeUtf8 => Value::String(array.as_string::<i64>().value(row).to_string()),
        DataType::LargeBinary => Value::Array(
            array
                .as_binary::<i64>()
                .value(row)
                .iter()
                .map(|&b| Value::from(b))
                .collect(),
        ),
        DataType::LargeList(item) => {
            let list = array.as_list::<i64>();
            let values = list.value(row);
            Value::Array(
                (0..values.len())
                    .map(|i| render_value(item, values.as_ref(), i))
                    .collect(),
            )
        }
        DataType::FixedSizeList(item, _) => {
            let list = array.as_fixed_size_list();
            let values = list.value(row);
            if type_name(field).starts_with("std::bitset<") {
                let bits = values.as_boolean();
                // Bit 0 is stored first; std::bitset::to_string() puts it last.
                let text: String = (0..bits.len())
                    .rev()
                    .map(|i| if bits.value(i) { '1' } else { '0' })
                    .collect();
                Value::String(text)
            } else {
                Value::Array(
                    (0..values.len())
                        .map(|i| render_value(item, values.as_ref(), i))
                        .collect(),
                )
            }
        }
        DataType::Struct(children) => {
            let s = array.as_struct();
            let positional = {
                let t = type_name(field);
                t.starts_with("std::pair<") || t.starts_with("std::tuple<")
            };
            if positional {
                Value::Array(
                    children
                        .iter()
                        .zip(s.columns())
                        .map(|(f, c)| render_value(f, c.as_ref(), row))
                        .collect(),
                )
            } else {
                let mut obj = Map::new();
                for (f, c) in children.iter().zip(s.columns()) {
                    obj.insert(f.name().clone(), render_value(f, c.as_ref(), row));
                }
                Value::Object(obj)
            }
        }
        DataType::Map(entries_field, _) => {
            let map = array.as_map();
            let entries = map.value(row);
            let DataType::Struct(kv) = entries_field.data_type() else {
                return Value::Null;
            };
            let mut obj = Map::new();
            for i in 0..entries.len() {
                let key = render_value(&kv[0], entries.column(0).as_ref(), i);
                let value = render_value(&kv[1], entries.column(1).as_ref(), i);
                let key = match key {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                obj.insert(key, value);
            }
            Value::Object(obj)
        }
        DataType::Union(fields, _) => {
            let u = array.as_union();
            let type_id = u.type_id(row);
            let offset = u.value_offset(row);
            let child = u.child(type_id);
            match fields.iter().find(|(id, _)| *id == type_id) {
                Some((_, f)) => render_value(f, child.as_ref(), offset),
                None => Value::Null,
            }
        }
        other => Value::String(format!("<unsupported Arrow type {other}>")),
    }
}

/// Writes the entries of an attribute set (ROOT's attribute RNTuple schema 1.x: fields
/// `_rangeStart`, `_rangeLen` and the record `_userData`) as a JSON list of
/// `{"Value": ..., "Range": [first, last]}`, ordered by range start as ROOT lists them.
/// `Value` is the single attribute field's value, or an object of all of them; an empty
/// range renders as `null`.
pub fn dump_attributes(
    out: &mut impl std::io::Write,
    attrs: &rntuple::read::RNTupleReader,
) -> Result<(), rntuple::Error> {
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
    let text = serde_json::to_string_pretty(&Value::Array(entries))
        .map_err(|e| rntuple::Error::InvalidArgument(format!("cannot render JSON: {e}")))?;
    writeln!(out, "{text}").map_err(|source| rntuple::Error::Io {
        what: "standard output".into(),
        source,
    })
}
