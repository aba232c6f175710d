//! `std::array` and `std::bitset` in TTree streaming, decoded into the Arrow shapes the
//! converter gives them (the schema side of `import`, hence tested here).

use crate::error::Error;
use crate::ttree::{Builder, StreamCursor, Streamed, StreamerElement, StreamerInfo, TypeResolver};
use arrow_array::Array;
use arrow_schema::{DataType, Field};

/// The RNTuple C++ type of a streamed type name.
fn cpp(name: &str) -> String {
    TypeResolver::new(Vec::new())
        .type_of(name)
        .unwrap()
        .cpp_type()
}

/// Bytes from hexadecimal digits (spaces ignored).
fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|d| u8::from_str_radix(std::str::from_utf8(d).unwrap(), 16).unwrap())
        .collect()
}

/// The Arrow field RNTuple gives values of `t` (through the schema, as the converter).
fn target(t: &Streamed) -> Field {
    use crate::format::{Footer, Header};
    use crate::schema::{arrow_field, ColumnDefaults, Descriptor, SchemaBuilder};
    let mut builder = SchemaBuilder::new(ColumnDefaults::default());
    crate::import::register_classes(&mut builder, t).unwrap();
    let id = builder.add_cpp_field("x", &t.cpp_type()).unwrap();
    let header = Header {
        name: String::new(),
        description: String::new(),
        writer: String::new(),
        schema: builder.finish(),
    };
    let desc = Descriptor::build((1, 0, 0, 0), header, Footer::default(), Vec::new()).unwrap();
    arrow_field(&desc, id, "x").unwrap()
}

/// An Arrow array's values as JSON (numbers, booleans, lists; records as lists of
/// their members; maps as lists of [key, value]).
fn json(a: &dyn Array) -> Vec<serde_json::Value> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type, Int16Type, Int32Type};
    use serde_json::json;
    let n = a.len();
    match a.data_type() {
        DataType::Boolean => a.as_boolean().iter().map(|v| json!(v)).collect(),
        DataType::Int16 => a
            .as_primitive::<Int16Type>()
            .iter()
            .map(|v| json!(v))
            .collect(),
        DataType::Int32 => a
            .as_primitive::<Int32Type>()
            .iter()
            .map(|v| json!(v))
            .collect(),
        DataType::Float32 => a
            .as_primitive::<Float32Type>()
            .iter()
            .map(|v| json!(v))
            .collect(),
        DataType::Float64 => a
            .as_primitive::<Float64Type>()
            .iter()
            .map(|v| json!(v))
            .collect(),
        DataType::FixedSizeList(..) => {
            let l = a.as_fixed_size_list();
            (0..n).map(|i| json!(json(l.value(i).as_ref()))).collect()
        }
        DataType::LargeList(_) => {
            let l = a.as_list::<i64>();
            (0..n).map(|i| json!(json(l.value(i).as_ref()))).collect()
        }
        DataType::Map(..) => {
            let m = a.as_map();
            (0..n).map(|i| json!(json(&m.value(i)))).collect()
        }
        DataType::Struct(_) => {
            let s = a.as_struct();
            let members: Vec<Vec<serde_json::Value>> =
                s.columns().iter().map(|c| json(c.as_ref())).collect();
            (0..n)
                .map(|i| json!(members.iter().map(|m| m[i].clone()).collect::<Vec<_>>()))
                .collect()
        }
        other => panic!("{other}"),
    }
}

/// Decodes each entry (with the header a whole branch value has) as type `name` of
/// `resolver`; the values as JSON.
fn decoded(resolver: &mut TypeResolver, name: &str, entries: &[&str]) -> serde_json::Value {
    let t = resolver.type_of(name).unwrap();
    let mut out = Builder::new(&t);
    for entry in entries {
        let bytes = hex(entry);
        let mut cursor = StreamCursor::new(&bytes);
        cursor.decode(&t, &mut out, true).unwrap();
        assert_eq!(cursor.remaining(), 0, "{name}: {entry}");
    }
    let array = out.finish(&target(&t)).unwrap();
    serde_json::Value::Array(json(array.as_ref()))
}

// The entries below are as ROOT 6.40 writes them in TTree branches.

#[test]
fn bitsets_stream_as_a_count_and_one_byte_per_bit() {
    let mut resolver = TypeResolver::new(Vec::new());
    assert_eq!(cpp("bitset<20>"), "std::bitset<20>");
    assert_eq!(
        cpp("map<int,bitset<12> >"),
        "std::map<std::int32_t,std::bitset<12>>"
    );
    // A whole std::bitset<5> (byte count, version 10, 5 bits, bit 0 first): 0b00011.
    let got = decoded(
        &mut resolver,
        "bitset<5>",
        &["4000000b 000a 00000005 0101000000"],
    );
    assert_eq!(got, serde_json::json!([[true, true, false, false, false]]));
    // Items of a vector: no header of their own.
    let got = decoded(
        &mut resolver,
        "vector<bitset<8> >",
        &[
            "40000006 000a 00000000",
            "40000012 000a 00000001 00000008 0100000001000000",
        ],
    );
    let bits = [true, false, false, false, true, false, false, false];
    assert_eq!(got, serde_json::json!([[], [bits]]));
    // A bitset streamed with another number of bits than its type has is refused.
    let t = resolver.type_of("bitset<5>").unwrap();
    let bytes = hex("4000000a 000a 00000004 01010000");
    let err = StreamCursor::new(&bytes)
        .decode(&t, &mut Builder::new(&t), true)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("std::bitset<5> streamed with 4 bits"),
        "{err}"
    );
    for name in ["bitset<0>", "bitset<N>"] {
        let err = resolver.type_of(name).unwrap_err();
        assert!(matches!(err, Error::Unsupported(_)), "{name}: {err}");
    }
}

#[test]
fn std_arrays_named_by_type_are_objects_behind_their_headers() {
    let mut resolver = TypeResolver::new(Vec::new());
    assert_eq!(
        cpp("vector<array<float,3> >"),
        "std::vector<std::array<float,3>>"
    );
    let t = resolver.type_of("set<array<int,2> >").unwrap();
    let mut classes = Vec::new();
    t.classes(&mut classes);
    assert!(classes.is_empty(), "{classes:?}");
    // Object-wise (items of an inner vector): each array behind a byte count, version
    // 0 and the checksum of class array<short,2>.
    let got = decoded(
        &mut resolver,
        "vector<vector<array<short,2> > >",
        &["40000018 000a 00000001 00000001 4000000a 0000 61e39dfc 0001 0064"],
    );
    assert_eq!(got, serde_json::json!([[[[1, 100]]]]));
    // Member-wise (version bit 0x4000): the items' version 0 and checksum, the count,
    // then every array's values.
    let got = decoded(
        &mut resolver,
        "vector<array<float,3> >",
        &[
            "4000000c 400a 0000 702e1a10 00000000",
            "40000024 400a 0000 702e1a10 00000002 40000000 00000000 40400000 40000000 \
             40000000 40400000",
        ],
    );
    assert_eq!(
        got,
        serde_json::json!([[], [[2.0, 0.0, 3.0], [2.0, 2.0, 3.0]]])
    );
    // An unsplit map streams its pairs member-wise: every key, then every value, each
    // value (an array) behind its header.
    let got = decoded(
        &mut resolver,
        "map<int,array<int,2> >",
        &["40000038 400a 0000 0b5fb752 00000002 00000014 00000015 \
           4000000e 0000 66188abe 00000002 00000000 \
           4000000e 0000 66188abe 00000002 ffffffff"],
    );
    assert_eq!(got, serde_json::json!([[[20, [2, 0]], [21, [2, -1]]]]));
    // Bitsets as values: one header, then each value's count and bits.
    let got = decoded(
        &mut resolver,
        "map<int,bitset<3> >",
        &["40000028 400a 0000 0b5fb752 00000002 00000000 00000001 \
           40000010 000a 00000003 010000 00000003 000101"],
    );
    assert_eq!(
        got,
        serde_json::json!([[[0, [true, false, false]], [1, [false, true, true]]]])
    );
}

/// Class `TGArrBitsC { std::array<float,2> a; std::bitset<5> b;
/// std::vector<std::array<short,2>> va; std::vector<std::bitset<3>> vb; }`, version 2,
/// as ROOT 6.40 describes it.
fn arrays_and_bitsets_class() -> TypeResolver {
    let mut a = StreamerElement::basic("a", 25, 8, "float");
    a.array_length = 2;
    a.array_dim = 1;
    a.max_index[0] = 2;
    let stl = |name: &str, type_name: &str, stl_type: i32| {
        let mut e = StreamerElement::basic(name, 300, 24, type_name);
        e.element_class = "TStreamerSTL".to_string();
        e.stl_type = stl_type;
        e
    };
    TypeResolver::new(vec![StreamerInfo {
        class_name: "TGArrBitsC".to_string(),
        checksum: 0x1ee9_0425,
        class_version: 2,
        elements: vec![
            a,
            stl("b", "bitset<5>", 8),
            stl("va", "vector<array<short,2> >", 1),
            stl("vb", "vector<bitset<3> >", 1),
        ],
    }])
}

#[test]
fn class_members_of_std_array_and_bitset_types_decode() {
    let mut resolver = arrays_and_bitsets_class();
    assert_eq!(
        resolver.type_of("TGArrBitsC").unwrap(),
        Streamed::Object(resolver.class("TGArrBitsC", 0).unwrap())
    );
    // Object-wise: the array member as its values; the bitset and the vectors each
    // behind a header; the vector of arrays member-wise.
    let object = "40000045 0002 3e800000 40800000 4000000b 000a 00000005 0000010000 \
                  40000010 400a 0000 61e39dfc 00000001 0001 0009 \
                  40000014 000a 00000002 00000003 000101 00000003 000101";
    let got = decoded(&mut resolver, "TGArrBitsC", &[object]);
    let b = [false, false, true, false, false];
    let vb = [[false, true, true], [false, true, true]];
    assert_eq!(got, serde_json::json!([[[0.25, 4.0], b, [[1, 9]], vb]]));
    // Two objects in a vector, streamed member-wise: every a, every b (one header), every
    // va (one header marked member-wise: the arrays' version and checksum once, then
    // each vector's count and values), every vb.
    let vector = "40000070 400a 0002 00000002 \
                  3f000000 40800000 3f000000 40800000 \
                  40000014 000a 00000005 0100010000 00000005 0100010000 \
                  40000020 400a 0000 61e39dfc 00000002 0002 0009 0002 0009 \
                  00000002 0002 0009 0002 0009 \
                  40000018 000a 00000001 00000003 010101 00000001 00000003 010101";
    let got = decoded(&mut resolver, "vector<TGArrBitsC>", &[vector]);
    let item = serde_json::json!([
        [0.5, 4.0],
        [true, false, true, false, false],
        [[2, 9], [2, 9]],
        [[true, true, true]]
    ]);
    assert_eq!(got, serde_json::json!([[item, item]]));
}
