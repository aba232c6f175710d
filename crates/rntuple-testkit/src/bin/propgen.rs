//! Test support for the writer's property test (`tests/test_writer_properties.py`): from a
//! seed, a random schema of nested C++ types, random Arrow data and random write options;
//! writes `data.root` with this library's writer, `expected.json` (every entry rendered
//! from the in-memory Arrow data with the conventions of `rntuple dump --json`, defaults
//! for entries before a late model extension) and `manifest.json` (types, shapes,
//! options, structure).
//!
//! ```sh
//! cargo run --release -p rntuple-testkit --bin propgen -- --seed 7 --out /tmp/prop7
//! ```

// Not library code: stops at the first failure; its data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use arrow_array::types::{
    Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BooleanArray, FixedSizeListArray, Float32Array,
    Float64Array, LargeListArray, LargeStringArray, MapArray, PrimitiveArray, RecordBatch,
    StructArray, UnionArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema};
use rntuple::compression::{Algorithm, CompressionSettings};
use rntuple::container::FileWriter;
use rntuple::encoding::ColumnType;
use rntuple::format::{Footer, Header, SchemaDescription};
use rntuple::read::arrow_field;
use rntuple::schema::{
    ColumnDefaults, ColumnSpec, Descriptor, FieldKind, PrimitiveType, SchemaBuilder,
};
use rntuple::write::{BlobSink, RNTupleWriter, WriteOptions};
// The renderer of `rntuple dump --json` (the CLI's library), so that `expected.json` is
// written exactly as the command prints.
use rntuple_cli::render;
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::sync::Arc;

/// SplitMix64: small, deterministic, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo) as u64 + 1) as i64
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

const FUNDAMENTALS: [&str; 14] = [
    "bool",
    "char",
    "std::byte",
    "std::int8_t",
    "std::uint8_t",
    "std::int16_t",
    "std::uint16_t",
    "std::int32_t",
    "std::uint32_t",
    "std::int64_t",
    "std::uint64_t",
    "float",
    "double",
    "Double32_t",
];
/// The integers of 16 to 64 bits among [`FUNDAMENTALS`]: the keys of sets and maps.
const KEY_INTS: std::ops::Range<usize> = 5..11;
const SETS: [&str; 4] = [
    "std::set",
    "std::multiset",
    "std::unordered_set",
    "std::unordered_multiset",
];
const MAPS: [&str; 4] = [
    "std::map",
    "std::multimap",
    "std::unordered_map",
    "std::unordered_multimap",
];

/// A random C++ type whose nesting depth (counting this level) is at most `depth`.
/// `inside_optional` excludes optionals and variants directly inside an optional;
/// `copyable` excludes `std::atomic` and `std::unique_ptr` (below sets and maps, whose
/// ROOT dictionaries need copyable values); `ordered` excludes unordered sets and maps
/// (below a variant: ROOT 6.40 cannot read those back, not even from its own files).
fn random_type(
    rng: &mut Rng,
    depth: u32,
    inside_optional: bool,
    copyable: bool,
    ordered: bool,
) -> String {
    if depth <= 1 || rng.chance(0.3) {
        return if rng.chance(0.15) {
            "std::string".into()
        } else {
            rng.pick(&FUNDAMENTALS).into()
        };
    }
    let d = depth - 1;
    match rng.below(14) {
        0 | 1 => format!(
            "std::vector<{}>",
            random_type(rng, d, false, copyable, ordered)
        ),
        2 => format!(
            "ROOT::RVec<{}>",
            random_type(rng, d, false, copyable, ordered)
        ),
        3 => format!(
            "std::array<{},{}>",
            random_type(rng, d, false, copyable, ordered),
            rng.range(1, 4)
        ),
        4 => format!("std::bitset<{}>", rng.pick(&[1, 7, 8, 31, 64, 65, 130])),
        5 if !copyable => {
            let t = rng.pick(&FUNDAMENTALS);
            // ROOT maps Double32_t inside atomic to double anyway; keep it simple.
            let t = if t == "Double32_t" { "double" } else { t };
            format!("std::atomic<{t}>")
        }
        6 | 7 if !inside_optional => {
            let wrapper = if copyable || rng.chance(0.5) {
                "std::optional"
            } else {
                "std::unique_ptr"
            };
            format!(
                "{wrapper}<{}>",
                random_type(rng, d, true, copyable, ordered)
            )
        }
        8 if !inside_optional => {
            let k = rng.range(2, 4) as usize;
            let mut alts: Vec<String> = Vec::new();
            while alts.len() < k {
                // No optional (or variant) directly as an alternative: a union child
                // with nulls cannot sit in a non-nullable Arrow struct or list item.
                let t = random_type(rng, d, true, copyable, true);
                if !alts.contains(&t) {
                    alts.push(t);
                }
            }
            format!("std::variant<{}>", alts.join(","))
        }
        9 => format!(
            "std::pair<{},{}>",
            random_type(rng, d, false, copyable, ordered),
            random_type(rng, d, false, copyable, ordered)
        ),
        10 => {
            let k = rng.range(1, 4);
            let items: Vec<String> = (0..k)
                .map(|_| random_type(rng, d, false, copyable, ordered))
                .collect();
            format!("std::tuple<{}>", items.join(","))
        }
        11 => {
            let item = if rng.chance(0.3) {
                "std::string"
            } else {
                rng.pick(&FUNDAMENTALS[KEY_INTS])
            };
            let kinds = if ordered { &SETS[..2] } else { &SETS[..] };
            format!("{}<{item}>", rng.pick(kinds))
        }
        12 | 13 => {
            let key = if rng.chance(0.5) {
                "std::string"
            } else {
                rng.pick(&FUNDAMENTALS[KEY_INTS])
            };
            format!(
                "{}<{key},{}>",
                rng.pick(if ordered { &MAPS[..2] } else { &MAPS[..] }),
                random_type(rng, d, false, true, ordered)
            )
        }
        _ => format!(
            "std::vector<{}>",
            random_type(rng, d, false, copyable, ordered)
        ),
    }
}

/// A descriptor of a schema alone.
fn descriptor_of(schema: &SchemaDescription) -> Descriptor {
    let header = Header {
        name: "x".into(),
        description: String::new(),
        writer: String::new(),
        schema: schema.clone(),
    };
    Descriptor::build((1, 0, 2, 0), header, Footer::default(), vec![]).expect("descriptor")
}

/// How the values of a real leaf are constrained by its column (so they survive exactly).
#[derive(Debug, Clone, Copy)]
enum RealForm {
    Double,
    Float,
    Half,
    Trunc(u16),
    Quant(u16, f64),
}

/// Random column overrides on the subfields of field `id` (and itself); returns the
/// overrides as text for the manifest.
fn random_overrides(
    rng: &mut Rng,
    builder: &mut SchemaBuilder,
    desc: &Descriptor,
    id: u32,
    notes: &mut Vec<String>,
) {
    let f = desc.field(id);
    if !f.columns.is_empty() && rng.chance(0.3) {
        let path = desc.qualified_name(id);
        let spec: Option<Vec<ColumnSpec>> = match desc.field_kind(id) {
            FieldKind::Primitive(p) => match p {
                PrimitiveType::Float32 | PrimitiveType::Float64 => {
                    // No SplitReal16: ROOT 6.40 has no such column type (it refuses
                    // the whole model), although the builder accepts it.
                    let mut choices = vec![0, 2, 3, 4];
                    if p == PrimitiveType::Float64 {
                        choices.push(5);
                    }
                    Some(vec![match rng.pick(&choices) {
                        0 => ColumnSpec::new(ColumnType::Real16),
                        1 => ColumnSpec::new(ColumnType::SplitReal16),
                        2 => ColumnSpec::truncated(rng.range(10, 31) as u16),
                        3 => {
                            let bits = rng.range(1, 20) as u16;
                            let min = rng.range(-1000, 1000) as f64;
                            ColumnSpec::quantized(bits, min, min + ((1u64 << bits) - 1) as f64)
                        }
                        4 => ColumnSpec::new(if f.type_name() == "float" {
                            ColumnType::Real32
                        } else {
                            ColumnType::Real64
                        }),
                        _ => ColumnSpec::new(ColumnType::Real32),
                    }])
                }
                PrimitiveType::Int16 => Some(vec![ColumnSpec::new(ColumnType::Int16)]),
                PrimitiveType::UInt16 => Some(vec![ColumnSpec::new(ColumnType::UInt16)]),
                PrimitiveType::Int32 => Some(vec![ColumnSpec::new(ColumnType::Int32)]),
                PrimitiveType::UInt32 => Some(vec![ColumnSpec::new(ColumnType::UInt32)]),
                PrimitiveType::Int64 => Some(vec![ColumnSpec::new(ColumnType::Int64)]),
                PrimitiveType::UInt64 => Some(vec![ColumnSpec::new(ColumnType::UInt64)]),
                _ => None,
            },
            FieldKind::String => Some(vec![
                ColumnSpec::new(rng.pick(&[ColumnType::Index32, ColumnType::SplitIndex32])),
                ColumnSpec::new(ColumnType::Char),
            ]),
            FieldKind::List(_) | FieldKind::Map(_) | FieldKind::Optional(_) => {
                Some(vec![ColumnSpec::new(rng.pick(&[
                    ColumnType::Index32,
                    ColumnType::SplitIndex32,
                    ColumnType::Index64,
                ]))])
            }
            _ => None,
        };
        if let Some(spec) = spec {
            builder.set_columns(id, &spec).expect("column override");
            let text: Vec<String> = spec
                .iter()
                .map(|s| match (s.bits_on_storage, s.value_range) {
                    (Some(b), Some((lo, hi))) => format!("{}({b},{lo},{hi})", s.column_type),
                    (Some(b), None) => format!("{}({b})", s.column_type),
                    _ => s.column_type.to_string(),
                })
                .collect();
            notes.push(format!("{path}: {}", text.join("+")));
        }
    }
    for &c in &desc.field(id).children.clone() {
        random_overrides(rng, builder, desc, c, notes);
    }
}

/// Builds a schema of the given (name, C++ type) fields with random column overrides.
fn build_schema(
    rng: &mut Rng,
    fields: &[(String, String)],
    compressed: bool,
    notes: &mut Vec<String>,
) -> SchemaDescription {
    let mut builder = SchemaBuilder::new(ColumnDefaults { compressed });
    let mut ids = Vec::new();
    for (name, ty) in fields {
        ids.push(
            builder
                .add_cpp_field(name, ty)
                .unwrap_or_else(|e| panic!("add_cpp_field({name}, {ty}): {e}")),
        );
    }
    let plain = builder.clone().finish();
    let desc = descriptor_of(&plain);
    for &id in &ids {
        random_overrides(rng, &mut builder, &desc, id, notes);
    }
    builder.finish()
}

fn column_type_of(desc: &Descriptor, id: u32) -> (ColumnType, u16, Option<(f64, f64)>) {
    let rec = &desc.column(desc.field(id).columns[0]).record;
    (
        ColumnType::from_u16(rec.column_type).expect("column type"),
        rec.bits_on_storage,
        rec.value_range,
    )
}

fn real_form(desc: &Descriptor, id: u32) -> RealForm {
    let (ct, bits, range) = column_type_of(desc, id);
    match ct {
        ColumnType::Real64 | ColumnType::SplitReal64 => RealForm::Double,
        ColumnType::Real32 | ColumnType::SplitReal32 => RealForm::Float,
        ColumnType::Real16 | ColumnType::SplitReal16 => RealForm::Half,
        ColumnType::Real32Trunc => RealForm::Trunc(bits),
        ColumnType::Real32Quant => RealForm::Quant(bits, range.expect("range").0),
        other => panic!("unexpected real column {other}"),
    }
}

fn random_real(rng: &mut Rng, form: RealForm) -> f64 {
    match form {
        RealForm::Double => match rng.below(10) {
            0 => rng.pick(&[
                0.0,
                -0.0,
                1.0,
                -1.0,
                f64::MAX,
                f64::MIN,
                f64::MIN_POSITIVE,
                5e-324,
            ]),
            1 => f64::from_bits(rng.next() & !(0x7ffu64 << 52) | (rng.range(1, 2046) as u64) << 52),
            _ => (rng.next() as i64 as f64) / (1u64 << rng.below(60)) as f64,
        },
        RealForm::Float => match rng.below(10) {
            0 => rng.pick(&[
                0.0f32,
                -0.0,
                1.0,
                f32::MAX,
                f32::MIN,
                f32::MIN_POSITIVE,
                1e-45,
            ]) as f64,
            1 => f32::from_bits(
                rng.next() as u32 & !(0xffu32 << 23) | (rng.range(1, 254) as u32) << 23,
            ) as f64,
            _ => ((rng.next() as i32 as f32) / (1u32 << rng.below(30)) as f32) as f64,
        },
        RealForm::Half => {
            // m * 2^e with m < 2^11 and e >= -24 is exact in binary16 while <= 65504.
            let m = rng.below(2048) as f64;
            let e = rng.range(-24, 5) as i32;
            let v = m * 2f64.powi(e);
            if rng.chance(0.5) {
                -v
            } else {
                v
            }
        }
        RealForm::Trunc(bits) => {
            let x = random_real(rng, RealForm::Float) as f32;
            let mask = if bits >= 32 {
                u32::MAX
            } else {
                !((1u32 << (32 - bits)) - 1)
            };
            f32::from_bits(x.to_bits() & mask) as f64
        }
        RealForm::Quant(bits, min) => min + rng.below(1u64 << bits) as f64,
    }
}

fn random_int(rng: &mut Rng, lo: i128, hi: i128) -> i128 {
    match rng.below(8) {
        0 => lo,
        1 => hi,
        2 => 0.clamp(lo, hi),
        3 => (rng.range(-3, 3) as i128).clamp(lo, hi),
        _ => {
            let span = (hi - lo) as u128 + 1;
            let r = ((rng.next() as u128) << 64 | rng.next() as u128) % span;
            lo + r as i128
        }
    }
}

/// Whether to put every field in the header (`--no-late`).
static NO_LATE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn int_bounds(p: PrimitiveType) -> (i128, i128) {
    use PrimitiveType as P;
    match p {
        P::Bool => (0, 1),
        P::Char | P::Int8 => (i8::MIN as i128, i8::MAX as i128),
        P::Byte | P::UInt8 => (0, u8::MAX as i128),
        P::Int16 => (i16::MIN as i128, i16::MAX as i128),
        P::UInt16 => (0, u16::MAX as i128),
        P::Int32 => (i32::MIN as i128, i32::MAX as i128),
        P::UInt32 => (0, u32::MAX as i128),
        P::Int64 => (i64::MIN as i128, i64::MAX as i128),
        P::UInt64 => (0, u64::MAX as i128),
        P::Float32 | P::Float64 => unreachable!(),
    }
}

/// `v`, each within the bounds of `T` (as [`int_bounds`] gives them), as an array of `T`.
fn ints<T>(v: Vec<i128>) -> ArrayRef
where
    T: ArrowPrimitiveType,
    T::Native: TryFrom<i128>,
{
    Arc::new(PrimitiveArray::<T>::from_iter_values(v.into_iter().map(
        |x| T::Native::try_from(x).unwrap_or_else(|_| panic!("{x} out of bounds")),
    )))
}

fn int_array(p: PrimitiveType, v: Vec<i128>) -> ArrayRef {
    use PrimitiveType as P;
    match p {
        P::Bool => Arc::new(BooleanArray::from(
            v.into_iter().map(|x| x != 0).collect::<Vec<_>>(),
        )),
        P::Char | P::Int8 => ints::<Int8Type>(v),
        P::Byte | P::UInt8 => ints::<UInt8Type>(v),
        P::Int16 => ints::<Int16Type>(v),
        P::UInt16 => ints::<UInt16Type>(v),
        P::Int32 => ints::<Int32Type>(v),
        P::UInt32 => ints::<UInt32Type>(v),
        P::Int64 => ints::<Int64Type>(v),
        P::UInt64 => ints::<UInt64Type>(v),
        P::Float32 | P::Float64 => unreachable!(),
    }
}

fn random_string(rng: &mut Rng) -> String {
    let len = match rng.below(6) {
        0 => 0,
        1 => rng.below(200) as usize,
        _ => rng.below(8) as usize,
    };
    (0..len)
        .map(|_| (b' ' + rng.below(95) as u8) as char)
        .collect()
}

/// Random collection sizes for `n` parents; sometimes all empty.
fn random_lengths(rng: &mut Rng, n: usize, depth: u32) -> Vec<usize> {
    let max = match depth {
        0 => 6,
        1 => 4,
        _ => 3,
    };
    let mode = rng.below(10);
    (0..n)
        .map(|_| match mode {
            0 => 0,
            _ if rng.chance(0.2) => 0,
            _ => rng.below(max + 1) as usize,
        })
        .collect()
}

fn offsets(lengths: &[usize]) -> OffsetBuffer<i64> {
    OffsetBuffer::from_lengths(lengths.iter().copied())
}

/// The Arrow type of field `id` (named `name`).
fn arrow_type(desc: &Descriptor, id: u32, name: &str) -> DataType {
    arrow_field(desc, id, name)
        .expect("arrow field")
        .data_type()
        .clone()
}

fn item_field(desc: &Descriptor, id: u32) -> Arc<Field> {
    Arc::new(arrow_field(desc, id, desc.field(id).name()).expect("arrow field"))
}

/// Distinct (or, for multisets, possibly repeated) sorted keys of leaf field `id` for
/// each of `lengths`, concatenated. Unordered containers are shuffled.
fn key_values(
    rng: &mut Rng,
    desc: &Descriptor,
    id: u32,
    lengths: &[usize],
    unique: bool,
    sorted: bool,
) -> ArrayRef {
    let kind = desc.field_kind(id);
    match kind {
        FieldKind::String => {
            let mut all = Vec::new();
            for &k in lengths {
                let mut keys: Vec<String> = Vec::new();
                while keys.len() < k {
                    let s = random_string(rng);
                    if !unique || !keys.contains(&s) {
                        keys.push(s);
                    }
                }
                if sorted {
                    keys.sort();
                }
                all.extend(keys);
            }
            Arc::new(LargeStringArray::from(all))
        }
        FieldKind::Primitive(p) => {
            let (lo, hi) = int_bounds(p);
            let mut all = Vec::new();
            for &k in lengths {
                let mut keys: Vec<i128> = Vec::new();
                while keys.len() < k {
                    let v = random_int(rng, lo, hi);
                    if !unique || !keys.contains(&v) {
                        keys.push(v);
                    }
                }
                if sorted {
                    keys.sort();
                }
                all.extend(keys);
            }
            int_array(p, all)
        }
        other => panic!("unexpected key kind {other:?}"),
    }
}

/// Random values of field `id` for `n` entries, with the Arrow type the reader gives it.
fn gen(rng: &mut Rng, desc: &Descriptor, id: u32, n: usize, depth: u32) -> ArrayRef {
    let f = desc.field(id);
    match desc.field_kind(id) {
        FieldKind::Primitive(p) => match p {
            PrimitiveType::Float32 => {
                let form = real_form(desc, id);
                Arc::new(Float32Array::from_iter_values(
                    (0..n).map(|_| random_real(rng, form) as f32),
                ))
            }
            PrimitiveType::Float64 => {
                let mut form = real_form(desc, id);
                if matches!(form, RealForm::Double) && f.type_name() == "Double32_t" {
                    form = RealForm::Float;
                }
                Arc::new(Float64Array::from_iter_values(
                    (0..n).map(|_| random_real(rng, form)),
                ))
            }
            p => {
                let (lo, hi) = int_bounds(p);
                int_array(p, (0..n).map(|_| random_int(rng, lo, hi)).collect())
            }
        },
        FieldKind::String => Arc::new(LargeStringArray::from(
            (0..n).map(|_| random_string(rng)).collect::<Vec<_>>(),
        )),
        FieldKind::List(child) => {
            let lengths = random_lengths(rng, n, depth);
            let total: usize = lengths.iter().sum();
            let t = f.type_name();
            let values = if SETS.iter().any(|s| t.starts_with(&format!("{s}<"))) {
                let unique = !t.contains("multiset");
                let sorted = !t.starts_with("std::unordered");
                key_values(rng, desc, child, &lengths, unique, sorted)
            } else {
                gen(rng, desc, child, total, depth + 1)
            };
            Arc::new(LargeListArray::new(
                item_field(desc, child),
                offsets(&lengths),
                values,
                None,
            ))
        }
        FieldKind::Map(pair) => {
            let lengths = random_lengths(rng, n, depth);
            let total: usize = lengths.iter().sum();
            let kv = desc.field(pair).children.clone();
            let sorted = !f.type_name().starts_with("std::unordered");
            let keys = key_values(rng, desc, kv[0], &lengths, true, sorted);
            let values = gen(rng, desc, kv[1], total, depth + 1);
            let DataType::Map(entries_field, _) = arrow_type(desc, id, "m") else {
                unreachable!()
            };
            let DataType::Struct(kv_fields) = entries_field.data_type().clone() else {
                unreachable!()
            };
            let entries = StructArray::new(kv_fields, vec![keys, values], None);
            Arc::new(
                MapArray::try_new(
                    entries_field,
                    OffsetBuffer::<i32>::from_lengths(lengths.iter().copied()),
                    entries,
                    None,
                    false,
                )
                .expect("map array"),
            )
        }
        FieldKind::Optional(child) => {
            let mode = rng.below(6);
            let valid: Vec<bool> = (0..n)
                .map(|_| match mode {
                    0 => false,
                    1 => true,
                    _ => rng.chance(0.6),
                })
                .collect();
            let inner = gen(rng, desc, child, n, depth + 1);
            let nulls = NullBuffer::from(valid);
            let nulls = NullBuffer::union(Some(&nulls), inner.nulls());
            let data = inner
                .to_data()
                .into_builder()
                .nulls(nulls)
                .build()
                .expect("nullable array");
            arrow_array::make_array(data)
        }
        FieldKind::Record(_, children) => {
            let DataType::Struct(fields) = arrow_type(desc, id, "r") else {
                unreachable!()
            };
            let arrays = children
                .iter()
                .map(|&c| gen(rng, desc, c, n, depth + 1))
                .collect();
            Arc::new(StructArray::new(fields, arrays, None))
        }
        FieldKind::Array(child, k) => {
            let values = gen(rng, desc, child, n * k as usize, depth + 1);
            Arc::new(FixedSizeListArray::new(
                item_field(desc, child),
                k as i32,
                values,
                None,
            ))
        }
        FieldKind::Bitset(k) => {
            let DataType::FixedSizeList(item, _) = arrow_type(desc, id, "b") else {
                unreachable!()
            };
            let density = rng.pick(&[0.0, 0.1, 0.5, 0.9, 1.0]);
            let bits: Vec<bool> = (0..n * k as usize).map(|_| rng.chance(density)).collect();
            Arc::new(FixedSizeListArray::new(
                item,
                k as i32,
                Arc::new(BooleanArray::from(bits)),
                None,
            ))
        }
        FieldKind::Variant(children) => {
            let DataType::Union(union_fields, _) = arrow_type(desc, id, "v") else {
                unreachable!()
            };
            let k = children.len() as u64;
            let only = rng.chance(0.2).then(|| rng.below(k) as i8);
            let type_ids: Vec<i8> = (0..n)
                .map(|_| only.unwrap_or_else(|| rng.below(k) as i8))
                .collect();
            let mut counts = vec![0i32; children.len()];
            let value_offsets: Vec<i32> = type_ids
                .iter()
                .map(|&t| {
                    counts[t as usize] += 1;
                    counts[t as usize] - 1
                })
                .collect();
            let arrays = children
                .iter()
                .zip(&counts)
                .map(|(&c, &m)| gen(rng, desc, c, m as usize, depth + 1))
                .collect();
            Arc::new(
                UnionArray::try_new(
                    union_fields,
                    ScalarBuffer::from(type_ids),
                    Some(ScalarBuffer::from(value_offsets)),
                    arrays,
                )
                .expect("union array"),
            )
        }
        FieldKind::Wrapper(child) => gen(rng, desc, child, n, depth),
        other => panic!("unsupported kind {other:?} for {}", f.type_name()),
    }
}

/// The value an entry written before a late model extension reads as.
fn default_json(desc: &Descriptor, id: u32) -> Value {
    match desc.field_kind(id) {
        FieldKind::Primitive(PrimitiveType::Float32 | PrimitiveType::Float64) => json!("0x0p+0"),
        FieldKind::Primitive(_) => json!(0),
        FieldKind::String => json!(""),
        FieldKind::List(_) => json!([]),
        FieldKind::Map(_) => json!({}),
        FieldKind::Optional(_) | FieldKind::Variant(_) => Value::Null,
        FieldKind::Record(_, children) => {
            if desc.field(id).type_name().starts_with("std::pair<")
                || desc.field(id).type_name().starts_with("std::tuple<")
            {
                Value::Array(children.iter().map(|&c| default_json(desc, c)).collect())
            } else {
                let mut m = Map::new();
                for &c in &children {
                    m.insert(desc.field(c).name().to_string(), default_json(desc, c));
                }
                Value::Object(m)
            }
        }
        FieldKind::Array(child, k) => Value::Array(vec![default_json(desc, child); k as usize]),
        FieldKind::Bitset(k) => Value::String("0".repeat(k as usize)),
        FieldKind::Wrapper(child) => default_json(desc, child),
        other => panic!("no default for {other:?}"),
    }
}

/// The structure of field `id` for the Python side (canonicalization, uproot conversion).
fn shape(desc: &Descriptor, id: u32) -> Value {
    let f = desc.field(id);
    let t = f.type_name();
    match desc.field_kind(id) {
        FieldKind::Primitive(p) => {
            json!({"kind": "prim", "type": t, "float": matches!(p, PrimitiveType::Float32 | PrimitiveType::Float64), "bool": p == PrimitiveType::Bool})
        }
        FieldKind::String => json!({"kind": "string"}),
        FieldKind::List(c) => {
            let kind = if SETS.iter().any(|s| t.starts_with(&format!("{s}<"))) {
                "set"
            } else {
                "list"
            };
            json!({"kind": kind, "type": t, "unordered": t.starts_with("std::unordered"), "item": shape(desc, c)})
        }
        FieldKind::Map(pair) => {
            let kv = &desc.field(pair).children;
            json!({"kind": "map", "type": t, "unordered": t.starts_with("std::unordered"), "key": shape(desc, kv[0]), "value": shape(desc, kv[1])})
        }
        FieldKind::Optional(c) => json!({"kind": "optional", "type": t, "item": shape(desc, c)}),
        FieldKind::Record(_, cs) => {
            json!({"kind": "tuple", "type": t, "items": cs.iter().map(|&c| shape(desc, c)).collect::<Vec<_>>()})
        }
        FieldKind::Array(c, k) => json!({"kind": "array", "n": k, "item": shape(desc, c)}),
        FieldKind::Bitset(k) => json!({"kind": "bitset", "n": k}),
        FieldKind::Variant(cs) => {
            json!({"kind": "variant", "type": t, "items": cs.iter().map(|&c| shape(desc, c)).collect::<Vec<_>>()})
        }
        FieldKind::Wrapper(c) => json!({"kind": "atomic", "type": t, "item": shape(desc, c)}),
        other => panic!("no shape for {other:?}"),
    }
}

/// Every type name in the field tree of `id` (to build ROOT dictionaries for).
fn type_names(desc: &Descriptor, id: u32, out: &mut Vec<String>) {
    let t = desc.field(id).type_name().to_string();
    if !out.contains(&t) {
        out.push(t);
    }
    for &c in &desc.field(id).children {
        type_names(desc, c, out);
    }
}

/// The file writer as blob sink, counting payloads that span several keys.
struct CountingSink {
    file: FileWriter,
    split_blobs: u64,
}

impl BlobSink for CountingSink {
    fn write_blob(&mut self, payload: &[u8], max_key_size: u64) -> rntuple::Result<u64> {
        if payload.len() as u64 > max_key_size {
            self.split_blobs += 1;
        }
        self.file.write_blob(payload, max_key_size)
    }
}

fn random_options(rng: &mut Rng) -> (WriteOptions, Value) {
    let algo = rng.pick(&["zstd", "lz4", "zlib", "lzma", "none"]);
    let compression = match algo {
        "none" => CompressionSettings::UNCOMPRESSED,
        a => CompressionSettings::new(
            match a {
                "zstd" => Algorithm::Zstd,
                "lz4" => Algorithm::Lz4,
                "zlib" => Algorithm::Zlib,
                _ => Algorithm::Lzma,
            },
            rng.range(1, 9) as u32,
        ),
    };
    let page = rng.pick(&[16u64, 24, 32, 64, 100, 256, 4096, 65536, 1 << 20]);
    let initial = page.min(rng.pick(&[16u64, 64, 256, 4096]));
    let cluster = rng.pick(&[64u64, 300, 2048, 16384, 262144, 128 << 20]);
    // Drawn from a copy, so that the draws after it (and so every seed's schema and data)
    // stay what they were before this option existed.
    let page_run_size =
        Rng(rng.0 ^ 0x5EED_0F20_2500).pick(&[None, Some(256u64), Some(4096), Some(8 << 20)]);
    // Drawn in the order they always were, so that every seed's draws stay the same.
    let quarter_cluster_limit = rng.chance(0.2);
    let page_buffer_budget = rng.chance(0.15).then(|| rng.pick(&[256u64, 4096, 65536]));
    let page_checksums = rng.chance(0.6);
    let same_page_merging = rng.chance(0.5);
    let max_key_size = if rng.chance(0.2) {
        // Not smaller: the first key must hold the offsets of all the others.
        rng.pick(&[4096u64, 65536])
    } else {
        1 << 30
    };
    let checkpoint_every = rng.chance(0.5).then(|| rng.range(1, 5) as u64);
    let options = WriteOptions::builder()
        .compression(compression)
        .cluster_size(cluster)
        // Never below the page size, as ROOT requires.
        .max_unzipped_cluster_size(if quarter_cluster_limit {
            (cluster * 4).max(page)
        } else {
            1280 << 20
        })
        .initial_page_size(initial)
        .page_size(page)
        .page_buffer_budget(page_buffer_budget)
        .page_run_size(page_run_size)
        .page_checksums(page_checksums)
        // Merging needs checksums (without them, it was off all along).
        .same_page_merging(same_page_merging && page_checksums)
        .max_key_size(max_key_size)
        .checkpoint_every(checkpoint_every.unwrap_or(0))
        .build()
        .expect("valid write options");
    let manifest = json!({
        "compression": algo,
        "compression_settings": if algo == "none" { 0 } else { compression.algorithm as u32 * 100 + compression.level },
        "approx_zipped_cluster_size": options.cluster_size(),
        "max_unzipped_cluster_size": options.max_unzipped_cluster_size(),
        "initial_unzipped_page_size": options.initial_page_size(),
        "max_unzipped_page_size": options.page_size(),
        "page_buffer_budget": options.page_buffer_budget(),
        "page_run_size": options.page_run_size(),
        "enable_page_checksums": options.page_checksums(),
        "enable_same_page_merging": options.same_page_merging(),
        "max_key_size": options.max_key_size(),
        "checkpoint_every": options.checkpoint_every(),
    });
    (options, manifest)
}

fn batch_of(names: &[String], desc: &Descriptor, ids: &[u32], arrays: &[ArrayRef]) -> RecordBatch {
    let fields: Vec<Field> = names
        .iter()
        .zip(ids)
        .map(|(n, &id)| arrow_field(desc, id, n).expect("arrow field"))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays.to_vec()).expect("batch")
}

/// The file uproot reads when the main file has payloads split across keys.
const WHOLE_KEYS_FILE: &str = "data-whole-keys.root";

/// The schema and data of one seed, as the writer is given them.
struct Data<'a> {
    early_schema: &'a SchemaDescription,
    late_schema: Option<&'a SchemaDescription>,
    early_batch: &'a RecordBatch,
    late_batch: Option<&'a RecordBatch>,
    /// The entry at which the late fields are added.
    ext_at: usize,
}

/// What writing one file did.
struct Written {
    /// Payloads that spanned several keys.
    split_blobs: u64,
    /// The writer calls, in order.
    log: Vec<String>,
}

/// Writes `data` to `path` as the RNTuple `ntpl`: the early fields' entries before the
/// extension, then the model extension and every field's remaining entries.
fn write_file(path: &std::path::Path, mut rng: Rng, options: WriteOptions, data: &Data) -> Written {
    let name = "ntpl";
    let mut sink = CountingSink {
        file: FileWriter::create(path, options.compression()).expect("create file"),
        split_blobs: 0,
    };
    let mut log = Vec::new();
    let n_entries = data.early_batch.num_rows();
    let anchor = {
        let mut writer = RNTupleWriter::new(&mut sink, name, data.early_schema.clone(), options)
            .unwrap_or_else(|e| panic!("RNTupleWriter::new: {e}"));
        write_rows(
            &mut rng,
            &mut writer,
            &data.early_batch.slice(0, data.ext_at),
            &mut log,
        );
        if let (Some(schema), Some(lb)) = (data.late_schema, data.late_batch) {
            writer
                .extend_schema(schema.clone())
                .unwrap_or_else(|e| panic!("extend_schema: {e}"));
            log.push("extend_schema".into());
            let mut fields: Vec<Field> = data
                .early_batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.as_ref().clone())
                .collect();
            fields.extend(lb.schema().fields().iter().map(|f| f.as_ref().clone()));
            let mut columns: Vec<ArrayRef> = data
                .early_batch
                .columns()
                .iter()
                .map(|c| c.slice(data.ext_at, n_entries - data.ext_at))
                .collect();
            columns.extend(lb.columns().iter().cloned());
            let all = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("batch");
            write_rows(&mut rng, &mut writer, &all, &mut log);
        }
        writer.finish().unwrap_or_else(|e| panic!("finish: {e}"))
    };
    sink.file
        .write_anchor(name, &anchor.to_object())
        .expect("write anchor");
    let split_blobs = sink.split_blobs;
    sink.file.finish().expect("finish file");
    Written { split_blobs, log }
}

/// Writes rows `lo..hi` of `batch` in random chunks, sometimes committing clusters and
/// cluster groups between chunks.
fn write_rows<S: BlobSink>(
    rng: &mut Rng,
    writer: &mut RNTupleWriter<S>,
    batch: &RecordBatch,
    log: &mut Vec<String>,
) {
    let n = batch.num_rows();
    let mut at = 0;
    while at < n {
        let chunk = match rng.below(4) {
            0 => n - at,
            1 => 1 + rng.below(10) as usize,
            _ => 1 + rng.below(n as u64) as usize,
        }
        .min(n - at);
        writer
            .write_batch(&batch.slice(at, chunk))
            .unwrap_or_else(|e| panic!("write_batch: {e}"));
        at += chunk;
        log.push(format!("write {chunk}"));
        if rng.chance(0.1) {
            writer.commit_cluster().expect("commit_cluster");
            log.push("commit_cluster".into());
        }
        if rng.chance(0.05) {
            writer.commit_cluster_group().expect("commit_cluster_group");
            log.push("commit_cluster_group".into());
        }
    }
}

fn main() {
    let mut seed: Option<u64> = None;
    let mut given_types: Option<String> = None;
    let mut late_from: Option<usize> = None;
    let mut given_entries: Option<usize> = None;
    let mut out: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seed" => seed = args.next().and_then(|s| s.parse().ok()),
            "--out" => out = args.next().map(PathBuf::from),
            "--types" => given_types = args.next(),
            "--late-from" => late_from = args.next().and_then(|s| s.parse().ok()),
            "--entries" => given_entries = args.next().and_then(|s| s.parse().ok()),
            "--no-late" => NO_LATE.store(true, std::sync::atomic::Ordering::Relaxed),
            _ => {
                eprintln!("usage: propgen --seed N --out DIR [--no-late] [--types \"T1;T2\"] [--late-from K] [--entries N]");
                std::process::exit(2);
            }
        }
    }
    let (Some(seed), Some(out)) = (seed, out) else {
        eprintln!(
            "usage: propgen --seed N --out DIR [--no-late] [--types \"T1;T2\"] [--late-from K] [--entries N]"
        );
        std::process::exit(2);
    };
    std::fs::create_dir_all(&out).expect("create output directory");
    let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x5EED);

    let (mut options, mut options_json) = random_options(&mut rng);
    let compressed = options.compression().level != 0;
    let n_fields = rng.range(3, 8) as usize;
    let late = rng.chance(0.35) && n_fields >= 2;
    let n_late = if late {
        rng.range(1, (n_fields as i64 - 1).min(3)) as usize
    } else {
        0
    };
    // `--no-late`: the same types, all in the header (to tell extension bugs from others).
    let (late, n_late) = if NO_LATE.load(std::sync::atomic::Ordering::Relaxed) {
        (false, 0)
    } else {
        (late, n_late)
    };
    let mut types: Vec<(String, String)> = (0..n_fields)
        .map(|i| {
            let depth = rng_depth(&mut rng);
            (
                format!("f{i}"),
                random_type(&mut rng, depth, false, false, false),
            )
        })
        .collect();
    // Every reader must have a field to compare: uproot 5.7 skips every field with a
    // std::variant inside, ROOT some of them. Drawn from another generator, so that the
    // other seeds' draws stay what they were.
    let mut redraw = Rng(seed ^ 0x00F1_E1D5);
    while types.iter().all(|(_, t)| t.contains("std::variant")) {
        let depth = rng_depth(&mut redraw);
        types[0].1 = random_type(&mut redraw, depth, false, false, false);
    }
    // `--types "T1;T2;..."`: these types instead (to minimize a failing schema).
    if let Some(given) = &given_types {
        types = given
            .split(';')
            .enumerate()
            .map(|(i, t)| (format!("f{i}"), t.trim().to_string()))
            .collect();
    }
    let n_fields = types.len();
    let n_late = match late_from {
        // `--late-from K`: fields K.. come with a late model extension.
        Some(k) => n_fields.saturating_sub(k),
        None => n_late.min(n_fields.saturating_sub(1)),
    };
    let late = (late || late_from.is_some()) && n_late > 0 && n_late < n_fields;
    let n_early = n_fields - n_late;
    // At least one entry, so that every reader compares values (`--entries 0` writes an
    // empty RNTuple).
    let n_entries = match rng.below(10) {
        0 => 1,
        1 => rng.range(1, 3) as usize,
        2..=4 => rng.range(1, 3000) as usize,
        _ => rng.range(1, 400) as usize,
    };
    let n_entries = given_entries.unwrap_or(n_entries);
    let ext_at = if late {
        rng.range(0, n_entries as i64) as usize
    } else {
        n_entries
    };

    let mut overrides = Vec::new();
    let early_schema = build_schema(&mut rng, &types[..n_early], compressed, &mut overrides);
    let late_schema =
        late.then(|| build_schema(&mut rng, &types[n_early..], compressed, &mut overrides));
    // Like ROOT, the writer refuses a page buffer budget below two initial pages per
    // column: raise a too small one (it still limits tiny-cluster files).
    let n_columns =
        early_schema.columns.len() + late_schema.as_ref().map_or(0, |s| s.columns.len());
    let need = 2 * n_columns as u64 * options.initial_page_size().max(16);
    if options.effective_page_buffer_budget() < need {
        let budget = need * rng.pick(&[1u64, 2, 8]);
        options = options
            .to_builder()
            .page_buffer_budget(Some(budget))
            .build()
            .expect("valid write options");
        options_json["page_buffer_budget"] = Value::from(budget);
        options_json["page_buffer_budget_raised"] = Value::from(true);
    }
    let early_desc = descriptor_of(&early_schema);
    let late_desc = late_schema.as_ref().map(descriptor_of);

    // Data: early fields for all entries, late fields for the entries after the extension.
    let early_ids = early_desc.top_level.clone();
    let early_names: Vec<String> = types[..n_early].iter().map(|(n, _)| n.clone()).collect();
    let early_arrays: Vec<ArrayRef> = early_ids
        .iter()
        .map(|&id| gen(&mut rng, &early_desc, id, n_entries, 0))
        .collect();
    let late_names: Vec<String> = types[n_early..].iter().map(|(n, _)| n.clone()).collect();
    let late_ids = late_desc
        .as_ref()
        .map(|d| d.top_level.clone())
        .unwrap_or_default();
    let late_arrays: Vec<ArrayRef> = late_desc
        .as_ref()
        .map(|d| {
            late_ids
                .iter()
                .map(|&id| gen(&mut rng, d, id, n_entries - ext_at, 0))
                .collect()
        })
        .unwrap_or_default();

    // Expected rendering.
    let early_batch = batch_of(&early_names, &early_desc, &early_ids, &early_arrays);
    let late_batch = late_desc
        .as_ref()
        .map(|d| batch_of(&late_names, d, &late_ids, &late_arrays));
    let mut expected = Vec::with_capacity(n_entries);
    for row in 0..n_entries {
        let mut obj = match render::render_row(&early_batch, row) {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        if let (Some(d), Some(b)) = (&late_desc, &late_batch) {
            for (i, (name, &id)) in late_names.iter().zip(&late_ids).enumerate() {
                let v = if row < ext_at {
                    default_json(d, id)
                } else {
                    render::render_value(b.schema().field(i), b.column(i).as_ref(), row - ext_at)
                };
                obj.insert(name.clone(), v);
            }
        }
        expected.push(Value::Object(obj));
    }

    let mut field_list = Vec::new();
    let mut all_types = Vec::new();
    for (i, &id) in early_ids.iter().enumerate() {
        type_names(&early_desc, id, &mut all_types);
        field_list.push(json!({"name": early_names[i], "type": early_desc.field(id).type_name(), "late": false, "shape": shape(&early_desc, id)}));
    }
    if let Some(d) = &late_desc {
        for (i, &id) in late_ids.iter().enumerate() {
            type_names(d, id, &mut all_types);
            field_list.push(json!({"name": late_names[i], "type": d.field(id).type_name(), "late": true, "shape": shape(d, id)}));
        }
    }
    // A first manifest before writing, so that a failing write can be diagnosed.
    let mut manifest = json!({
        "seed": seed,
        "name": "ntpl",
        "file": "data.root",
        "n_entries": n_entries,
        "extension_at": if late { Value::from(ext_at) } else { Value::Null },
        "fields": field_list,
        "type_names": all_types,
        "column_overrides": overrides,
        "options": options_json,
        "split_blobs": Value::Null,
    });
    std::fs::write(
        out.join("manifest.json"),
        serde_json::to_string_pretty(&manifest).expect("json"),
    )
    .expect("write manifest");

    // Write. The batching draws come from a copy, so that a second file of the same
    // writes (below) splits them the same way.
    let data = Data {
        early_schema: &early_schema,
        late_schema: late_schema.as_ref(),
        early_batch: &early_batch,
        late_batch: late_batch.as_ref(),
        ext_at,
    };
    let write_draws = Rng(rng.0);
    let written = write_file(
        &out.join("data.root"),
        Rng(write_draws.0),
        options.clone(),
        &data,
    );
    let split_blobs = written.split_blobs;
    // uproot 5.7 cannot read payloads split across keys: for it, the same writes again
    // with keys large enough, so that every seed has a file uproot reads whole.
    if split_blobs > 0 {
        let whole_keys = options
            .to_builder()
            .max_key_size(1 << 30)
            .build()
            .expect("valid write options");
        write_file(&out.join(WHOLE_KEYS_FILE), write_draws, whole_keys, &data);
        manifest["uproot_file"] = Value::from(WHOLE_KEYS_FILE);
    }
    let log = written.log;

    manifest["split_blobs"] = Value::from(split_blobs);
    manifest["write_log"] = Value::from(compress_log(&log));
    std::fs::write(
        out.join("manifest.json"),
        serde_json::to_string_pretty(&manifest).expect("json"),
    )
    .expect("write manifest");
    std::fs::write(
        out.join("expected.json"),
        serde_json::to_string(&Value::Array(expected)).expect("json"),
    )
    .expect("write expected");
}

/// Nesting depth of a top-level type: 1 to 4, deeper ones more often.
fn rng_depth(rng: &mut Rng) -> u32 {
    rng.pick(&[1, 2, 3, 3, 4, 4, 4])
}

/// The write calls, runs of batch writes summarized.
fn compress_log(log: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rows = 0u64;
    let mut calls = 0u64;
    for l in log {
        if let Some(k) = l.strip_prefix("write ") {
            rows += k.parse::<u64>().unwrap_or(0);
            calls += 1;
        } else {
            if calls > 0 {
                out.push(format!("write_batch x{calls} ({rows} entries)"));
            }
            rows = 0;
            calls = 0;
            out.push(l.clone());
        }
    }
    if calls > 0 {
        out.push(format!("write_batch x{calls} ({rows} entries)"));
    }
    out
}
