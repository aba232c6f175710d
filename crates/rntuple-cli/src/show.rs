//! Renders entries for people, in the layout of ROOT's `RNTupleReader::Show`: one
//! `{ ... }` block an entry, a field a line (`"name": value`), records over several lines
//! indented by two spaces a level, collections on one line (`[a, b]`, their records too),
//! `true`/`false`, `std::byte` as `0x2a`, `char` as the character itself, strings and
//! bitsets in double quotes, maps as collections of `{"_0": key, "_1": value}`, empty
//! optionals as `null`, streamer fields as `<streamer mode>`.
//!
//! Two things differ from ROOT on purpose: floats are written with as many digits as it
//! takes to read them back exactly (ROOT's `std::ostream` keeps 6 significant digits; see
//! [`format_f64`]), and a `std::variant` shows its active alternative (ROOT 6.40 prints
//! `"<unsupported type: std::variant<...>>"`).

use crate::render::{node, type_name, Node};
use arrow_array::{Array, RecordBatch};
use arrow_schema::Field;
use rntuple::error::printable;
use rntuple::read::TYPE_NAME_KEY;
use rntuple::schema::{Descriptor, FieldKind};
use std::collections::HashSet;
use std::io::{self, Write};

/// How to show the values of one RNTuple: what its descriptor says that the Arrow types
/// do not (the underlying type of an enum).
pub struct Shower {
    /// The enum types whose underlying type is `char`: ROOT prints their values as
    /// characters, like `char`s (in Arrow both are 8-bit integers).
    char_enums: HashSet<String>,
}

impl Shower {
    /// A shower for the RNTuple `descriptor` describes.
    pub fn new(descriptor: &Descriptor) -> Shower {
        let char_enums = descriptor
            .fields
            .iter()
            .filter(|f| match descriptor.field_kind(f.id) {
                FieldKind::Wrapper(item) => descriptor.field(item).type_name() == "char",
                _ => false,
            })
            .map(|f| f.type_name().to_string())
            .collect();
        Shower { char_enums }
    }

    /// Writes entry `row` of `batch` as `RNTupleReader::Show` does: `{`, each column on a
    /// line of its own, `}` and a new line.
    pub fn write_entry(
        &self,
        out: &mut impl Write,
        batch: &RecordBatch,
        row: usize,
    ) -> io::Result<()> {
        let schema = batch.schema();
        let members: Vec<(&str, &Field, &dyn Array)> = schema
            .fields()
            .iter()
            .zip(batch.columns())
            .map(|(f, c)| (f.name().as_str(), f.as_ref(), c.as_ref()))
            .collect();
        self.record(out, &members, row, MULTI_LINE)?;
        writeln!(out)
    }

    /// Writes one value: indented (unless on one line), `"name": ` when named, then the
    /// value.
    fn value(
        &self,
        out: &mut impl Write,
        name: Option<&str>,
        field: &Field,
        array: &dyn Array,
        row: usize,
        at: At,
    ) -> io::Result<()> {
        indent(out, at)?;
        if let Some(name) = name {
            write!(out, "\"{}\": ", printable(name))?;
        }
        // ROOT prints the item of an optional, a std::unique_ptr or an atomic on one line.
        let at = if is_wrapper(field) {
            at.on_one_line()
        } else {
            at
        };
        match node(field, array, row) {
            Node::Null => out.write_all(b"null"),
            Node::Bool(b) => out.write_all(if b { b"true" } else { b"false" }),
            // A char is written as the character it is, as a C++ stream writes it, but a
            // control character or a byte past ASCII escaped, so that it never reaches
            // the terminal as a command.
            Node::Int(i) if self.is_char(field) => {
                out.write_all(escape_byte(i.to_le_bytes()[0]).as_bytes())
            }
            Node::Int(i) => write!(out, "{i}"),
            Node::UInt(u) if type_name(field) == "std::byte" => write!(out, "0x{u:02x}"),
            Node::UInt(u) => write!(out, "{u}"),
            Node::Float32(x) => out.write_all(format_f32(x).as_bytes()),
            Node::Float64(x) => out.write_all(format_f64(x).as_bytes()),
            // Quotes are not escaped, as ROOT writes strings; control characters are.
            Node::Str(s) => write!(out, "\"{}\"", printable(s)),
            Node::Bytes(_) => out.write_all(b"<streamer mode>"),
            Node::Bits(bits) => write!(out, "\"{bits}\""),
            Node::List(item, values) => {
                out.write_all(b"[")?;
                for i in 0..values.len() {
                    if i > 0 {
                        out.write_all(b", ")?;
                    }
                    self.value(out, None, item, values.as_ref(), i, ONE_LINE)?;
                }
                out.write_all(b"]")
            }
            Node::Record { members, row, .. } => {
                let members: Vec<(&str, &Field, &dyn Array)> = members
                    .iter()
                    .map(|(f, c)| (f.name().as_str(), *f, c.as_ref()))
                    .collect();
                self.record(out, &members, row, at)
            }
            // A map is a collection of pairs.
            Node::Map {
                key,
                value,
                entries,
            } => {
                out.write_all(b"[")?;
                for i in 0..entries.len() {
                    if i > 0 {
                        out.write_all(b", ")?;
                    }
                    let pair = [
                        ("_0", key, entries.column(0).as_ref()),
                        ("_1", value, entries.column(1).as_ref()),
                    ];
                    self.record(out, &pair, i, ONE_LINE)?;
                }
                out.write_all(b"]")
            }
            Node::Variant(f, child, offset) => {
                self.value(out, None, f, child.as_ref(), offset, at.on_one_line())
            }
            Node::Unsupported(_) => write!(
                out,
                "\"<unsupported type: {}>\"",
                printable(type_name(field))
            ),
        }
    }

    /// Writes a record's members (each the value at `row` of its array): on one line as
    /// `{"a": 1, "b": 2}`, or one member a line a level deeper and `}` at the record's
    /// level.
    fn record(
        &self,
        out: &mut impl Write,
        members: &[(&str, &Field, &dyn Array)],
        row: usize,
        at: At,
    ) -> io::Result<()> {
        out.write_all(b"{")?;
        let inside = At {
            level: at.level + 1,
            ..at
        };
        for (k, (name, field, array)) in members.iter().enumerate() {
            if !at.one_line {
                writeln!(out)?;
            }
            self.value(out, Some(name), field, *array, row, inside)?;
            if k + 1 < members.len() {
                out.write_all(if at.one_line { b", " } else { b"," })?;
            } else if !at.one_line {
                writeln!(out)?;
            }
        }
        indent(out, at)?;
        out.write_all(b"}")
    }

    /// Whether the values of `field` are `char`s (or enums of `char`).
    fn is_char(&self, field: &Field) -> bool {
        let t = type_name(field);
        t == "char" || self.char_enums.contains(t)
    }
}

/// A char's byte for the terminal: printable ASCII as it is, else a C escape (`\0`,
/// `\n`, `\t`, `\x1b`, `\xff`).
fn escape_byte(byte: u8) -> String {
    match byte {
        0x20..=0x7e => char::from(byte).to_string(),
        0 => "\\0".to_string(),
        b'\n' => "\\n".to_string(),
        b'\t' => "\\t".to_string(),
        b'\r' => "\\r".to_string(),
        other => format!("\\x{other:02x}"),
    }
}

/// Whether `field` is an optional, a `std::unique_ptr` or an atomic: its Arrow field is
/// its item's, under the wrapper's type name.
fn is_wrapper(field: &Field) -> bool {
    field.metadata().get(TYPE_NAME_KEY).is_some_and(|t| {
        ["std::optional<", "std::unique_ptr<", "std::atomic<"]
            .iter()
            .any(|p| t.starts_with(p))
    })
}

/// Where a value is written: its nesting level (two spaces of indentation a level) and
/// whether on one line (no indentation, no new lines: inside collections, optionals,
/// atomics and variants).
#[derive(Clone, Copy)]
struct At {
    level: usize,
    one_line: bool,
}

/// An entry's top: its fields one a line.
const MULTI_LINE: At = At {
    level: 0,
    one_line: false,
};
/// A collection's items, and everything inside them.
const ONE_LINE: At = At {
    level: 0,
    one_line: true,
};

impl At {
    fn on_one_line(self) -> At {
        At {
            one_line: true,
            ..self
        }
    }
}

/// Indents to `at`'s level, unless on one line.
fn indent(out: &mut impl Write, at: At) -> io::Result<()> {
    if !at.one_line {
        for _ in 0..at.level {
            out.write_all(b"  ")?;
        }
    }
    Ok(())
}

/// A double as `rntuple show` writes it: the shortest decimal that reads back to the same
/// value, laid out as C's `%g` lays out its digits (`0.1`, `1e+06`, `1.7976931348623157e+308`):
/// in exponent form when the exponent is below -4 or at least the number of digits (and
/// at least 6); `inf`, `-inf`, `nan`, `-nan`. A value with 6 significant digits or fewer
/// reads exactly as ROOT's `Show` writes it (`%g`, 6 digits).
pub fn format_f64(x: f64) -> String {
    decimal(x, x.is_nan(), x.is_sign_negative())
}

/// A float as `rntuple show` writes it: as [`format_f64`], with the digits that read
/// back to the same `float`.
pub fn format_f32(x: f32) -> String {
    decimal(x, x.is_nan(), x.is_sign_negative())
}

fn decimal<T: std::fmt::Display + std::fmt::LowerExp>(x: T, nan: bool, negative: bool) -> String {
    if nan {
        return if negative { "-nan" } else { "nan" }.to_string();
    }
    // Rust writes the shortest digits that read back to the same value: "-1.25e-7".
    let scientific = format!("{x:e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return x.to_string(); // inf, -inf
    };
    let Ok(exponent) = exponent.parse::<i32>() else {
        return scientific;
    };
    let digits = mantissa.bytes().filter(u8::is_ascii_digit).count();
    let precision = i32::try_from(digits).unwrap_or(i32::MAX).max(6);
    if exponent < -4 || exponent >= precision {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
    } else {
        x.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::{format_f32, format_f64, Shower};
    use arrow_array::builder::{Int32Builder, LargeListBuilder};
    use arrow_array::{
        Array, ArrayRef, BooleanArray, Float32Array, Int32Array, Int8Array, LargeStringArray,
        RecordBatch, StructArray, UInt8Array,
    };
    use arrow_buffer::NullBuffer;
    use arrow_schema::{DataType, Field, Fields, Schema};
    use rntuple::read::TYPE_NAME_KEY;
    use std::collections::{HashMap, HashSet};
    use std::sync::Arc;

    fn typed(name: &str, data_type: DataType, type_name: &str) -> Field {
        let metadata = HashMap::from([(TYPE_NAME_KEY.to_string(), type_name.to_string())]);
        Field::new(name, data_type, type_name.starts_with("std::optional<")).with_metadata(metadata)
    }

    #[test]
    fn entries_are_laid_out_as_roots_show() {
        let point = Fields::from(vec![
            typed("x", DataType::Int32, "std::int32_t"),
            typed("y", DataType::Float32, "float"),
        ]);
        let point_array = |nulls: Option<NullBuffer>| {
            StructArray::new(
                point.clone(),
                vec![
                    Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef,
                    Arc::new(Float32Array::from(vec![0.5, 1e-7])),
                ],
                nulls,
            )
        };
        let empty = StructArray::new_empty_fields(2, None);
        let record_fields = Fields::from(vec![
            typed("p", DataType::Struct(point.clone()), "Point"),
            typed("e", DataType::Struct(Fields::empty()), "Empty"),
        ]);
        let record = StructArray::new(
            record_fields.clone(),
            vec![Arc::new(point_array(None)) as ArrayRef, Arc::new(empty)],
            None,
        );
        let mut list = LargeListBuilder::new(Int32Builder::new()).with_field(Arc::new(typed(
            "_0",
            DataType::Int32,
            "std::int32_t",
        )));
        list.values().append_value(3);
        list.values().append_value(4);
        list.append(true);
        list.append(true);
        let list = list.finish();
        let columns: Vec<(Field, ArrayRef)> = vec![
            (
                typed("b", DataType::Boolean, "bool"),
                Arc::new(BooleanArray::from(vec![true, false])),
            ),
            (
                typed("c", DataType::Int8, "char"),
                Arc::new(Int8Array::from(vec![0x61, -1])),
            ),
            (
                typed("y", DataType::UInt8, "std::byte"),
                Arc::new(UInt8Array::from(vec![0x2a, 7])),
            ),
            (
                typed("s", DataType::LargeUtf8, "std::string"),
                Arc::new(LargeStringArray::from(vec!["hi", ""])),
            ),
            (
                typed("r", DataType::Struct(record_fields), "Record"),
                Arc::new(record),
            ),
            (
                typed("o", DataType::Struct(point.clone()), "std::optional<Point>"),
                Arc::new(point_array(Some(NullBuffer::from(vec![true, false])))),
            ),
            (
                typed("v", list.data_type().clone(), "std::vector<std::int32_t>"),
                Arc::new(list),
            ),
        ];
        let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = columns.into_iter().unzip();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap();
        let shower = Shower {
            char_enums: HashSet::new(),
        };
        let mut out = Vec::new();
        for row in 0..2 {
            shower.write_entry(&mut out, &batch, row).unwrap();
        }
        let mut want = String::from(concat!(
            "{\n",
            "  \"b\": true,\n",
            "  \"c\": a,\n",
            "  \"y\": 0x2a,\n",
            "  \"s\": \"hi\",\n",
            "  \"r\": {\n",
            "    \"p\": {\n",
            "      \"x\": 1,\n",
            "      \"y\": 0.5\n",
            "    },\n",
            "    \"e\": {    }\n",
            "  },\n",
            "  \"o\": {\"x\": 1, \"y\": 0.5},\n",
            "  \"v\": [3, 4]\n",
            "}\n",
        ))
        .into_bytes();
        want.extend_from_slice(b"{\n  \"b\": false,\n  \"c\": \\xff,\n  \"y\": 0x07,\n");
        want.extend_from_slice(
            concat!(
                "  \"s\": \"\",\n",
                "  \"r\": {\n",
                "    \"p\": {\n",
                "      \"x\": 2,\n",
                "      \"y\": 1e-07\n",
                "    },\n",
                "    \"e\": {    }\n",
                "  },\n",
                "  \"o\": null,\n",
                "  \"v\": []\n",
                "}\n",
            )
            .as_bytes(),
        );
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&want)
        );
        assert_eq!(out, want);
    }

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        use super::{escape_byte, printable};
        assert_eq!(escape_byte(b'a'), "a");
        assert_eq!(escape_byte(b'"'), "\"");
        assert_eq!(escape_byte(0), "\\0");
        assert_eq!(escape_byte(0x1b), "\\x1b");
        assert_eq!(escape_byte(b'\n'), "\\n");
        assert_eq!(escape_byte(0xff), "\\xff");
        assert_eq!(printable("Müon \"1\""), "Müon \"1\"");
        assert_eq!(printable("a\u{1b}[2Jb\u{7f}\u{85}"), "a\\x1b[2Jb\\x7f\\x85");
    }

    #[test]
    fn floats_are_shortest_round_trip_in_g_layout() {
        let cases: [(f64, &str); 16] = [
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (0.1, "0.1"),
            (2.5, "2.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-5, "1.5e-05"),
            (123456.0, "123456"),
            (1e6, "1e+06"),
            (1234567.0, "1234567"),
            (9007199254740992.0, "9007199254740992"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (f64::INFINITY, "inf"),
            (f64::NAN, "nan"),
        ];
        for (x, want) in cases {
            assert_eq!(format_f64(x), want, "for {x:e}");
        }
        assert_eq!(format_f64(f64::NEG_INFINITY), "-inf");
        assert_eq!(format_f64(-1e100), "-1e+100");
        assert_eq!(format_f32(0.1), "0.1");
        assert_eq!(format_f32(f32::MAX), "3.4028235e+38");
        assert_eq!(format_f32(-65504.0), "-65504");
        assert_eq!(format_f32(6.1035156e-5), "6.1035156e-05");
    }
}
