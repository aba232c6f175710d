//! Schema evolution on read through the Rust API (`read_as`, `projection_as`, `unify`),
//! on an RNTuple of three clusters (10, 20 and 30 entries) written in memory; the values
//! expected are computed by hand from the entry numbers. ROOT 6.40 is the oracle of the
//! rules themselves in `tests/test_evolution.py`.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]

mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int16Type, Int64Type, UInt8Type};
use arrow_array::{
    Array, ArrayRef, Float64Array, Int32Array, LargeListArray, RecordBatch, StructArray,
};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field};
use rntuple::read::{
    unification, unify, FieldOf, Inexact, OnOverflow, RNTupleReader, ReadAs, ReadTypes, RecordPaths,
};
use rntuple::Error;
use std::sync::Arc;

/// Entries `first..first + n`: `i` = 10 * entry - 100 (int32), `d` = entry + 0.5 and
/// 1e300 at entry 42 (double), `v` = [entry, ..] of entry % 3 items (int32), `rec` =
/// {a: entry (int32), b: entry / 4 (double)}.
fn batch(first: i32, n: i32) -> RecordBatch {
    let entries: Vec<i32> = (first..first + n).collect();
    let i: ArrayRef = Arc::new(Int32Array::from_iter_values(
        entries.iter().map(|&e| 10 * e - 100),
    ));
    let d: ArrayRef = Arc::new(Float64Array::from_iter_values(entries.iter().map(|&e| {
        if e == 42 {
            1e300
        } else {
            f64::from(e) + 0.5
        }
    })));
    let mut offsets = vec![0i64];
    let mut items = Vec::new();
    for &e in &entries {
        for k in 0..e % 3 {
            items.push(e * 1000 + k);
        }
        offsets.push(items.len() as i64);
    }
    let v: ArrayRef = Arc::new(LargeListArray::new(
        Arc::new(Field::new("_0", DataType::Int32, false)),
        OffsetBuffer::new(offsets.into()),
        Arc::new(Int32Array::from(items)),
        None,
    ));
    let rec = StructArray::from(vec![
        (
            Arc::new(Field::new("a", DataType::Int32, false)),
            Arc::new(Int32Array::from(entries.clone())) as ArrayRef,
        ),
        (
            Arc::new(Field::new("b", DataType::Float64, false)),
            Arc::new(Float64Array::from_iter_values(
                entries.iter().map(|&e| f64::from(e) / 4.0),
            )) as ArrayRef,
        ),
    ]);
    RecordBatch::try_from_iter(vec![
        ("i", i),
        ("d", d),
        ("v", v),
        ("rec", Arc::new(rec) as ArrayRef),
    ])
    .unwrap()
}

fn reader() -> RNTupleReader {
    common::reader_of_clusters(&[batch(0, 10), batch(10, 20), batch(30, 30)])
}

fn ty(name: &str) -> ReadAs {
    ReadAs::Type(name.into())
}

#[test]
fn integers_widen_and_narrow_with_a_check_per_value() {
    let reader = reader();
    let fields = common::strings(&["i"]);
    let wide = reader
        .read_as(
            Some(&fields),
            0..60,
            &ReadTypes::new().with_type("i", ty("std::int64_t")),
        )
        .unwrap();
    let i = wide.column(0).as_primitive::<Int64Type>();
    assert_eq!(
        i.values().to_vec(),
        (0..60).map(|e| 10 * e - 100).collect::<Vec<i64>>()
    );

    // int16 holds every value: 10 * 59 - 100 = 490.
    let narrow = reader
        .read_as(
            Some(&fields),
            0..60,
            &ReadTypes::new().with_type("i", ty("short")),
        )
        .unwrap();
    assert_eq!(narrow.column(0).data_type(), &DataType::Int16);
    assert_eq!(narrow.column(0).as_primitive::<Int16Type>().value(59), 490);

    // uint8: entries 0..=9 are negative and 36.. are over 255: the first bad entry of
    // the range is named with its value, in whichever cluster it is.
    let to_u8 = ReadTypes::new().with_type("i", ty("std::uint8_t"));
    let err = reader.read_as(Some(&fields), 10..60, &to_u8).unwrap_err();
    let Error::OutOfRange { .. } = err.root_cause() else {
        panic!("{err}");
    };
    let message = err.to_string();
    assert!(
        message
            .contains("field \"i\": the value 260 of entry 36 is out of the range of std::uint8_t"),
        "{message}"
    );
    // Masked: those entries are null, the others read.
    let masked = reader
        .read_as(
            Some(&fields),
            0..60,
            &to_u8.clone().on_overflow(OnOverflow::Mask),
        )
        .unwrap();
    let col = masked.column(0).as_primitive::<UInt8Type>();
    assert_eq!(col.null_count(), 10 + 24);
    assert!(col.is_null(0) && col.is_null(9) && col.is_null(36) && col.is_valid(10));
    assert_eq!(col.value(35), 250);
    assert!(masked.schema().field(0).is_nullable());
}

#[test]
fn doubles_read_as_floats_fail_where_their_class_changes() {
    let reader = reader();
    let fields = common::strings(&["d"]);
    let types = ReadTypes::new().with_type("d", ty("float"));
    let head = reader.read_as(Some(&fields), 0..42, &types).unwrap();
    assert_eq!(head.column(0).as_primitive::<Float32Type>().value(41), 41.5);
    let err = reader.read_as(Some(&fields), 40..50, &types).unwrap_err();
    assert!(
        err.to_string().contains("the value 1e300 of entry 42"),
        "{err}"
    );
    // float -> double always reads.
    let wide = reader
        .read_as(
            Some(&fields),
            0..60,
            &ReadTypes::new().with_type("d", ty("double")),
        )
        .unwrap();
    assert_eq!(
        wide.column(0).as_primitive::<Float64Type>().value(42),
        1e300
    );
}

#[test]
fn collections_convert_their_items_and_name_the_entry_of_a_bad_item() {
    let reader = reader();
    let fields = common::strings(&["v"]);
    let wide = reader
        .read_as(
            Some(&fields),
            0..60,
            &ReadTypes::new().with_type("v", ty("ROOT::RVec<std::int64_t>")),
        )
        .unwrap();
    let list = wide.column(0).as_list::<i64>();
    assert_eq!(list.value_length(5), 2); // 5 % 3
    let items = list.value(5);
    assert_eq!(
        items.as_primitive::<Int64Type>().values().to_vec(),
        vec![5000, 5001]
    );
    // int16 holds items up to 32767: entry 33 has none (33 % 3), entry 34 has 34000.
    let err = reader
        .read_as(
            Some(&fields),
            0..60,
            &ReadTypes::new().with_type("v", ty("std::vector<std::int16_t>")),
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("the value 34000 of entry 34"),
        "{err}"
    );
    // A scalar cannot be read as a collection, nor the reverse: refused before reading.
    for (field, want) in [("i", "std::vector<std::int32_t>"), ("v", "std::int32_t")] {
        let err = reader
            .projection_as(
                Some(&common::strings(&[field])),
                RecordPaths::Columns,
                &ReadTypes::new().with_type(field, ty(want)),
            )
            .unwrap_err();
        let Error::IncompatibleType(message) = err.root_cause() else {
            panic!("{err}");
        };
        assert!(message.contains(want), "{message}");
    }
}

#[test]
fn records_read_member_by_member() {
    let reader = reader();
    let fields = common::strings(&["rec"]);
    let types = ReadTypes::new().with_type(
        "rec",
        ReadAs::Record(vec![
            ("b".into(), ty("float")),
            ("c".into(), ty("std::int32_t")),
            ("a".into(), ty("std::int64_t")),
        ]),
    );
    let batch = reader.read_as(Some(&fields), 3..5, &types).unwrap();
    let rec = batch.column(0).as_struct();
    assert_eq!(rec.column_names(), vec!["b", "c", "a"]);
    assert_eq!(
        rec.column(0)
            .as_primitive::<Float32Type>()
            .values()
            .to_vec(),
        vec![0.75, 1.0]
    );
    assert_eq!(rec.column(1).null_count(), 2);
    assert_eq!(
        rec.column(2).as_primitive::<Int64Type>().values().to_vec(),
        vec![3, 4]
    );
    // A real member is not read as an integer.
    let bad = ReadTypes::new().with_type("rec.b", ty("int"));
    let err = reader
        .projection_as(Some(&fields), RecordPaths::Members, &bad)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("field \"rec.b\" of type \"double\" cannot be read as \"std::int32_t\""),
        "{err}"
    );
}

#[test]
fn unify_promotes_by_the_rule_of_numbers() {
    let reader = reader();
    let d = reader.descriptor();
    let i = d.find_field("i").unwrap();
    let dd = d.find_field("d").unwrap();
    let v = d.find_field("v").unwrap();
    let at = |id| FieldOf {
        descriptor: d,
        id,
        file: "mem",
    };
    assert_eq!(unify(&[at(i), at(i)]).unwrap(), ty("std::int32_t"));
    assert_eq!(unify(&[at(i), at(dd)]).unwrap(), ty("double"));
    let err = unify(&[at(i), at(v)]).unwrap_err();
    assert!(
        err.to_string()
            .contains("\"std::int32_t\" in mem and \"std::vector<std::int32_t>\" in mem"),
        "{err}"
    );
    // What it gives reads every file: an int32 field as the double of a mix, by the rule
    // of a caller's types (every int32 is exactly a double).
    let types = ReadTypes::new().with_type("i", ty("double"));
    let batch = reader
        .read_as(Some(&common::strings(&["i"])), 0..2, &types)
        .unwrap();
    assert_eq!(
        batch
            .column(0)
            .as_primitive::<Float64Type>()
            .values()
            .to_vec(),
        vec![-100.0, -90.0]
    );
}

/// An RNTuple of one cluster: `k` (int64) = 2**62 + 1, 5, -2**63, 2**53, 2**53 + 1 and
/// `u` (uint64) = 2**64 - 1, 7, 2**63, 0, 1.
fn wide_integers() -> RNTupleReader {
    use arrow_array::{Int64Array, UInt64Array};
    let k: ArrayRef = Arc::new(Int64Array::from(vec![
        (1i64 << 62) + 1,
        5,
        i64::MIN,
        1i64 << 53,
        (1i64 << 53) + 1,
    ]));
    let u: ArrayRef = Arc::new(UInt64Array::from(vec![u64::MAX, 7, 1u64 << 63, 0, 1]));
    common::reader_of_clusters(&[RecordBatch::try_from_iter(vec![("k", k), ("u", u)]).unwrap()])
}

#[test]
fn integers_read_as_reals_only_when_exact() {
    let reader = wide_integers();
    let k = common::strings(&["k"]);
    let as_double = ReadTypes::new().with_type("k", ty("double"));
    // The first value that a double does not hold: named with its entry and what it
    // would read as (2**62 + 1 reads as 2**62).
    let err = reader.read_as(Some(&k), 0..5, &as_double).unwrap_err();
    let Error::Inexact {
        field,
        entry,
        value,
        read_as,
        ..
    } = err.root_cause()
    else {
        panic!("{err}");
    };
    assert_eq!(
        (field.as_str(), *entry, value.as_str(), read_as.as_str()),
        ("k", 0, "4611686018427387905", "4.611686018427388e18")
    );
    assert!(err.to_string().contains("not exactly a double"), "{err}");
    // Masked: exactly the values a double does not hold are null (-2**63 and 2**53 are
    // doubles).
    let masked = reader
        .read_as(
            Some(&k),
            0..5,
            &as_double.clone().on_overflow(OnOverflow::Mask),
        )
        .unwrap();
    let got: Vec<Option<f64>> = masked
        .column(0)
        .as_primitive::<Float64Type>()
        .iter()
        .collect();
    assert_eq!(
        got,
        vec![
            None,
            Some(5.0),
            Some(-(2f64.powi(63))),
            Some(2f64.powi(53)),
            None
        ]
    );
    // The entries that fit read without a check failing.
    let fine = reader.read_as(Some(&k), 1..4, &as_double).unwrap();
    assert_eq!(fine.column(0).null_count(), 0);
    // uint64 as float: 7, 0, 1 and 2**63 are floats, 2**64 - 1 is not.
    let as_float = ReadTypes::new()
        .with_type("u", ty("float"))
        .on_overflow(OnOverflow::Mask);
    let masked = reader
        .read_as(Some(&common::strings(&["u"])), 0..5, &as_float)
        .unwrap();
    let got: Vec<Option<f32>> = masked
        .column(0)
        .as_primitive::<Float32Type>()
        .iter()
        .collect();
    assert_eq!(
        got,
        vec![None, Some(7.0), Some(2f32.powi(63)), Some(0.0), Some(1.0)]
    );
}

#[test]
fn unification_names_the_files_it_may_not_hold() {
    let reader = wide_integers();
    let d = reader.descriptor();
    let (k, u) = (d.find_field("k").unwrap(), d.find_field("u").unwrap());
    let at = |id, file| FieldOf {
        descriptor: d,
        id,
        file,
    };
    // int64 and uint64: int64, the uint64 file's values checked (NumPy's float64 would
    // hold neither 2**62 + 1 nor 2**64 - 1).
    let both = unification(&[at(k, "a.root"), at(u, "b.root")]).unwrap();
    assert_eq!(both.read_as, ty("std::int64_t"));
    assert_eq!(
        both.inexact,
        vec![Inexact {
            field: "u".into(),
            file: "b.root".into(),
            from: "std::uint64_t".into(),
            to: "std::int64_t".into(),
        }]
    );
    // Alike: nothing to note.
    let same = unification(&[at(k, "a.root"), at(k, "c.root")]).unwrap();
    assert_eq!((same.read_as, same.inexact), (ty("std::int64_t"), vec![]));
    // Read as unified, a value that does not fit is found as it is read.
    let err = reader
        .read_as(
            Some(&common::strings(&["u"])),
            0..5,
            &ReadTypes::new().with_type("u", both.read_as.clone()),
        )
        .unwrap_err();
    assert!(err.to_string().contains("18446744073709551615"), "{err}");
}

#[test]
fn a_detached_reader_plans_reads_and_reads_no_page() {
    let reader = wide_integers();
    let detached = reader.detached();
    // The same plan (schema, conversions) from the metadata alone.
    let types = ReadTypes::new().with_type("k", ty("double"));
    let k = common::strings(&["k"]);
    let planned = detached
        .projection_as(Some(&k), RecordPaths::Members, &types)
        .unwrap();
    let original = reader
        .projection_as(Some(&k), RecordPaths::Members, &types)
        .unwrap();
    assert_eq!(planned.schema(), original.schema());
    assert_eq!(detached.num_entries(), 5);
    // A page read fails, naming what is missing, instead of reading anything.
    let err = detached.read(Some(&k), 0..5).unwrap_err();
    assert!(err.to_string().contains("metadata alone"), "{err}");
}
