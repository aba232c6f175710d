//! Schemas and data that come from Arrow producers (data frames, Awkward Arrays), as
//! the Python package writes them: nullable fields as `std::optional` on request, lists
//! of untyped structs as untyped collections, and nulls refused where no optional can
//! hold them.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use arrow_array::builder::{Float32Builder, LargeListBuilder, StructBuilder};
use arrow_array::{Array, ArrayRef, Float64Array, RecordBatch};
use arrow_schema::{DataType, Field, Fields, Schema};
use rntuple::read::RNTupleReader;
use rntuple::schema::{ColumnDefaults, SchemaBuilder};
use rntuple::write::{RNTupleWriter, WriteOptions};
use rntuple::{Error, Result};
use rntuple_io::MemorySource;
use std::sync::Arc;

fn builder(nullable_as_optional: bool) -> SchemaBuilder {
    SchemaBuilder::new(ColumnDefaults { compressed: true })
        .nullable_as_optional(nullable_as_optional)
}

/// Writes `batch` with a schema built from its Arrow fields and reads it back.
fn round_trip(batch: &RecordBatch) -> Result<(RNTupleReader, RecordBatch)> {
    let mut b = builder(true);
    for f in batch.schema().fields() {
        b.add_arrow_field(f)?;
    }
    let mut sink: Vec<u8> = Vec::new();
    let anchor = {
        let mut writer = RNTupleWriter::new(&mut sink, "t", b.finish(), WriteOptions::default())?;
        writer.write_batch(batch)?;
        writer.finish()?
    };
    let reader =
        RNTupleReader::from_anchor(Arc::new(MemorySource::new("mem", sink)), anchor, "t".into())?;
    let read = reader.read(None, 0..reader.num_entries())?;
    Ok((reader, read))
}

fn type_of(reader: &RNTupleReader, name: &str) -> String {
    let d = reader.descriptor();
    d.field(d.find_field(name).expect("field exists"))
        .type_name()
        .to_string()
}

#[test]
fn nullable_fields_become_optional_only_when_asked() {
    let item = Field::new("item", DataType::Float32, true);
    let fields = [
        Field::new("x", DataType::Float64, true),
        Field::new("y", DataType::Float64, false),
        Field::new("v", DataType::LargeList(Arc::new(item)), false),
    ];
    let mut on = builder(true);
    let mut off = builder(false);
    for f in &fields {
        on.add_arrow_field(f).unwrap();
        off.add_arrow_field(f).unwrap();
    }
    let types = |s: rntuple::format::SchemaDescription| -> Vec<String> {
        s.fields
            .iter()
            .filter(|f| f.parent_id as usize == s.fields.iter().position(|g| g == *f).unwrap())
            .map(|f| f.type_name.clone())
            .collect()
    };
    assert_eq!(
        types(on.finish()),
        [
            "std::optional<double>",
            "double",
            "std::vector<std::optional<float>>"
        ]
    );
    assert_eq!(
        types(off.finish()),
        ["double", "double", "std::vector<float>"]
    );
}

#[test]
fn optional_values_and_nulls_round_trip() {
    let x = Float64Array::from(vec![Some(1.5), None, Some(-2.0), None]);
    let schema = Schema::new(vec![Field::new("x", DataType::Float64, true)]);
    let batch =
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(x.clone()) as ArrayRef]).unwrap();
    let (reader, read) = round_trip(&batch).unwrap();
    assert_eq!(type_of(&reader, "x"), "std::optional<double>");
    let got = read
        .column(0)
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap();
    assert_eq!(got, &x);
}

#[test]
fn a_list_of_untyped_structs_is_an_untyped_collection() {
    let members = Fields::from(vec![
        Field::new("pt", DataType::Float32, false),
        Field::new("eta", DataType::Float32, false),
    ]);
    let mut list =
        LargeListBuilder::new(StructBuilder::from_fields(members.clone(), 0)).with_field(Arc::new(
            Field::new("item", DataType::Struct(members), false),
        ));
    let jets: [&[(f32, f32)]; 3] = [&[(40.0, 0.5), (30.0, -1.0)], &[], &[(25.5, 2.25)]];
    for event in jets {
        for &(pt, eta) in event {
            let s = list.values();
            s.field_builder::<Float32Builder>(0)
                .unwrap()
                .append_value(pt);
            s.field_builder::<Float32Builder>(1)
                .unwrap()
                .append_value(eta);
            s.append(true);
        }
        list.append(true);
    }
    let array = list.finish();
    let schema = Schema::new(vec![Field::new("Jet", array.data_type().clone(), false)]);
    let batch =
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(array.clone()) as ArrayRef]).unwrap();
    let (reader, read) = round_trip(&batch).unwrap();
    // ROOT's untyped collection: no type name, an untyped record item `_0`.
    assert_eq!(type_of(&reader, "Jet"), "");
    assert_eq!(type_of(&reader, "Jet._0"), "");
    assert_eq!(type_of(&reader, "Jet._0.pt"), "float");
    let got = read
        .column(0)
        .as_any()
        .downcast_ref::<arrow_array::LargeListArray>()
        .unwrap();
    assert_eq!(got.value_offsets(), &[0, 2, 2, 3]);
    let values = got
        .values()
        .as_any()
        .downcast_ref::<arrow_array::StructArray>()
        .unwrap();
    let pt = values
        .column(0)
        .as_any()
        .downcast_ref::<arrow_array::Float32Array>()
        .unwrap();
    let eta = values
        .column(1)
        .as_any()
        .downcast_ref::<arrow_array::Float32Array>()
        .unwrap();
    assert_eq!(pt.values().as_ref(), &[40.0, 30.0, 25.5]);
    assert_eq!(eta.values().as_ref(), &[0.5, -1.0, 2.25]);

    // A projection onto one member reads a column named after the collection, holding
    // only that member, and only its pages (the index and `pt` columns: 3 * 8 + 3 * 4).
    let names = ["Jet._0.pt".to_string()];
    let projected = reader.read(Some(&names), 0..3).unwrap();
    assert_eq!(projected.schema().field(0).name(), "Jet");
    let list = projected
        .column(0)
        .as_any()
        .downcast_ref::<arrow_array::LargeListArray>()
        .unwrap();
    assert_eq!(list.value_offsets(), &[0, 2, 2, 3]);
    let items = list
        .values()
        .as_any()
        .downcast_ref::<arrow_array::StructArray>()
        .unwrap();
    assert_eq!(items.num_columns(), 1);
    assert_eq!(items.column(0).as_ref(), pt as &dyn Array);
    assert_eq!(
        reader.selection_bytes_per_cluster(Some(&names)).unwrap(),
        [3 * 8 + 3 * 4]
    );
    assert_eq!(
        reader.selection_bytes_per_cluster(None).unwrap(),
        [3 * 8 + 3 * 4 + 3 * 4]
    );
    // Selecting the whole collection as well gives it whole, once.
    let both = ["Jet._0.pt".to_string(), "Jet".to_string()];
    let whole = reader.read(Some(&both), 0..3).unwrap();
    assert_eq!(whole.num_columns(), 1);
    assert_eq!(whole.column(0), read.column(0));
}

#[test]
fn nulls_in_a_field_that_is_not_optional_are_refused() {
    let mut b = builder(false);
    b.add_arrow_field(&Field::new("x", DataType::Float64, true))
        .unwrap();
    let mut sink: Vec<u8> = Vec::new();
    let mut writer =
        RNTupleWriter::new(&mut sink, "t", b.finish(), WriteOptions::default()).unwrap();
    let x = Float64Array::from(vec![Some(1.0), None]);
    let schema = Schema::new(vec![Field::new("x", DataType::Float64, true)]);
    let batch = RecordBatch::try_new(Arc::new(schema), vec![Arc::new(x) as ArrayRef]).unwrap();
    let err = writer.write_batch(&batch).unwrap_err();
    assert!(
        matches!(err.root_cause(), Error::InvalidArgument(_)),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains("\"x\"")
            && message.contains("1 missing")
            && message.contains("std::optional"),
        "{message}"
    );
}

#[test]
fn a_refused_batch_leaves_no_trace() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int32, false),
        Field::new("x", DataType::Float64, true),
    ]));
    let batch = |a: Vec<i32>, x: Vec<Option<f64>>| {
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(arrow_array::Int32Array::from(a)) as ArrayRef,
                Arc::new(Float64Array::from(x)) as ArrayRef,
            ],
        )
        .unwrap()
    };
    let mut b = builder(false);
    for f in schema.fields() {
        b.add_arrow_field(f).unwrap();
    }
    let mut sink: Vec<u8> = Vec::new();
    let anchor = {
        let mut writer =
            RNTupleWriter::new(&mut sink, "t", b.finish(), WriteOptions::default()).unwrap();
        writer
            .write_batch(&batch(vec![1, 2], vec![Some(1.0), Some(2.0)]))
            .unwrap();
        // `a` shreds fine, `x` is refused: `a`'s values must not stay behind.
        assert!(writer
            .write_batch(&batch(vec![3, 4], vec![Some(3.0), None]))
            .is_err());
        assert_eq!(writer.num_entries(), 2);
        writer
            .write_batch(&batch(vec![5], vec![Some(5.0)]))
            .unwrap();
        writer.finish().unwrap()
    };
    let reader =
        RNTupleReader::from_anchor(Arc::new(MemorySource::new("mem", sink)), anchor, "t".into())
            .unwrap();
    let read = reader.read(None, 0..reader.num_entries()).unwrap();
    let a = read
        .column(0)
        .as_any()
        .downcast_ref::<arrow_array::Int32Array>()
        .unwrap();
    let x = read
        .column(1)
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap();
    assert_eq!(a.values().as_ref(), &[1, 2, 5]);
    assert_eq!(x.values().as_ref(), &[1.0, 2.0, 5.0]);
}
