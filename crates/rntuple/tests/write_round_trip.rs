//! Writing what the reader read gives back the same values (in memory, no TFile).

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use rntuple::format::Anchor;
use rntuple::read::RNTupleReader;
use rntuple::write::{schema_for_copy, RNTupleWriter, WriteOptions};
use std::path::PathBuf;
use std::sync::Arc;

mod common;

fn copy_in_memory(path: &str, options: WriteOptions) -> (RNTupleReader, RNTupleReader) {
    let source = RNTupleReader::open_path(path, None).unwrap();
    let schema = schema_for_copy(source.descriptor()).unwrap();
    let mut sink: Vec<u8> = Vec::new();
    let anchor: Anchor = {
        let mut writer = RNTupleWriter::new(
            &mut sink,
            source.descriptor().name.as_str(),
            schema,
            options,
        )
        .unwrap();
        for c in &source.descriptor().clusters {
            let batch = source
                .read(None, c.first_entry..c.first_entry + c.n_entries)
                .unwrap();
            writer.write_batch(&batch).unwrap();
        }
        writer.finish().unwrap()
    };
    let copy = common::reader_in_memory("copy", sink, anchor, "copy");
    (source, copy)
}

/// A field of a schema extension: `name` of C++ type `type_name` below field
/// `parent_id`, of `role`.
fn field(name: &str, type_name: &str, parent_id: u32, role: u16) -> rntuple::format::FieldRecord {
    rntuple::format::FieldRecord {
        name: name.into(),
        type_name: type_name.into(),
        parent_id,
        role,
        ..Default::default()
    }
}

/// A column of a schema extension: of `column_type` and `bits_on_storage`, of field
/// `field_id`.
fn column(column_type: u16, bits_on_storage: u16, field_id: u32) -> rntuple::format::ColumnRecord {
    rntuple::format::ColumnRecord {
        column_type,
        bits_on_storage,
        field_id,
        ..Default::default()
    }
}

fn conformance(case: &str) -> String {
    common::conformance_file(case).display().to_string()
}

fn assert_same(source: &RNTupleReader, copy: &RNTupleReader) {
    let n = source.num_entries();
    assert_eq!(copy.num_entries(), n);
    let a = source.read(None, 0..n).unwrap();
    let b = copy.read(None, 0..n).unwrap();
    assert_eq!(a.schema(), b.schema());
    for (i, f) in a.schema().fields().iter().enumerate() {
        assert_eq!(a.column(i), b.column(i), "field {}", f.name());
    }
}

#[test]
fn example_round_trips_with_small_pages_and_clusters() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/events.root");
    let options = WriteOptions::builder()
        .page_size(128)
        .cluster_size(4096)
        .checkpoint_every(3)
        .build()
        .unwrap();
    let (source, copy) = copy_in_memory(path.to_str().unwrap(), options);
    let d = copy.descriptor();
    assert!(d.clusters.len() > 10, "{} clusters", d.clusters.len());
    assert!(d.cluster_groups.len() > 3);
    assert!(d.clusters[0].columns.iter().any(|c| c.pages.len() > 3));
    assert_same(&source, &copy);
}

#[test]
fn every_conformance_case_round_trips_in_memory() {
    let mut cases: Vec<String> = common::conformance_files()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|c| c != "structure.feature_flag")
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 50);
    let mut failures = Vec::new();
    for case in cases {
        let outcome = std::panic::catch_unwind(|| {
            let (source, copy) = copy_in_memory(&conformance(&case), WriteOptions::default());
            assert_same(&source, &copy);
        });
        if outcome.is_err() {
            failures.push(case);
        }
    }
    assert!(
        failures.is_empty(),
        "cases that do not round-trip: {failures:?}"
    );
}

#[test]
fn late_model_extension_defers_new_columns() {
    use arrow_array::{Array, RecordBatch};
    use arrow_schema::{Field, Schema};
    use rntuple::format::SchemaDescription;

    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/events.root");
    let source = RNTupleReader::open_path(path.to_str().unwrap(), None).unwrap();
    let n = source.num_entries();
    let all = source.read(None, 0..n).unwrap();
    let options = WriteOptions::builder().cluster_size(4096).build().unwrap();
    let extra = SchemaDescription {
        fields: vec![
            field("late_met", "double", 0, 0),
            field("late_jets", "std::vector<float>", 1, 1),
            field("_0", "float", 1, 0),
        ],
        columns: vec![
            column(0x19, 64, 0),
            column(0x1B, 64, 1),
            column(0x18, 32, 2),
        ],
        ..Default::default()
    };
    let split = 500usize;
    let mut sink: Vec<u8> = Vec::new();
    let anchor = {
        let schema = schema_for_copy(source.descriptor()).unwrap();
        let mut writer = RNTupleWriter::new(&mut sink, "Events", schema, options).unwrap();
        writer.write_batch(&all.slice(0, split)).unwrap();
        writer.extend_schema(extra).unwrap();
        let rest = all.slice(split, n as usize - split);
        let mut fields: Vec<Field> = rest
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        let mut columns = rest.columns().to_vec();
        for (new, old) in [("late_met", "MET_pt"), ("late_jets", "Jet_pt")] {
            let f = rest
                .schema()
                .field_with_name(old)
                .unwrap()
                .clone()
                .with_name(new);
            fields.push(f);
            columns.push(rest.column_by_name(old).unwrap().clone());
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
        writer.write_batch(&batch).unwrap();
        writer.finish().unwrap()
    };
    let copy = common::reader_in_memory("copy", sink, anchor, "copy");
    let d = copy.descriptor();
    assert!(d.clusters.len() > 4, "{} clusters", d.clusters.len());
    let late = d.find_field("late_met").unwrap();
    assert!(d.field(late).from_extension);
    let col = d.field(late).columns[0];
    assert_eq!(d.column(col).record.first_element_index, Some(split as i64));
    let back = copy.read(None, 0..n).unwrap();
    let met = back.column_by_name("late_met").unwrap();
    let jets = back.column_by_name("late_jets").unwrap();
    let zeros = arrow_array::Float64Array::from(vec![0.0; split]);
    assert_eq!(met.slice(0, split).as_ref(), &zeros as &dyn Array);
    // The values written after the extension, as read from the original.
    let rest = |name: &str| {
        all.column_by_name(name)
            .unwrap()
            .slice(split, n as usize - split)
    };
    assert_eq!(
        met.slice(split, n as usize - split).as_ref(),
        rest("MET_pt").as_ref()
    );
    let empty = jets.slice(0, split);
    let empty = empty
        .as_any()
        .downcast_ref::<arrow_array::LargeListArray>()
        .unwrap();
    assert!((0..split).all(|i| empty.value_length(i) == 0));
    assert_eq!(
        jets.slice(split, n as usize - split).as_ref(),
        rest("Jet_pt").as_ref()
    );
    // The fields from the header are unchanged.
    assert_eq!(
        back.column_by_name("Jet_eta").unwrap(),
        all.column_by_name("Jet_eta").unwrap()
    );
}

#[test]
fn entries_written_one_by_one_read_back_as_the_same_values() {
    use rntuple::schema::{ColumnDefaults, SchemaBuilder, Value};
    use Value::*;
    let mut b = SchemaBuilder::new(ColumnDefaults { compressed: true });
    let types = [
        ("flag", "bool"),
        ("n", "std::uint16_t"),
        ("x", "double"),
        ("name", "std::string"),
        ("jets", "std::vector<std::pair<float,std::int32_t>>"),
        ("maybe", "std::optional<std::int64_t>"),
        ("choice", "std::variant<std::int32_t,std::string>"),
        ("weights", "std::map<std::string,double>"),
        ("pos", "std::array<float,3>"),
        ("bits", "std::bitset<3>"),
        ("nested", "std::vector<std::vector<std::int8_t>>"),
    ];
    for (name, ty) in types {
        b.add_cpp_field(name, ty).unwrap();
    }
    let schema = b.finish();
    let entries = vec![
        vec![
            Bool(true),
            UInt(7),
            Float(-1.5),
            String("e1".into()),
            List(vec![
                Record(vec![Float(30.5), Int(-1)]),
                Record(vec![Float(4.0), Int(1)]),
            ]),
            Int(i64::MIN),
            Variant(1, Box::new(String("abc".into()))),
            Map(vec![(String("a".into()), Float(0.25))]),
            List(vec![Float(1.0), Float(2.0), Float(3.0)]),
            List(vec![Bool(true), Bool(false), Bool(true)]),
            List(vec![List(vec![Int(1), Int(-2)]), List(vec![])]),
        ],
        vec![
            Bool(false),
            UInt(65535),
            Float(f64::MAX),
            String(std::string::String::new()),
            List(vec![]),
            Null,
            Variant(0, Box::new(Int(42))),
            Map(vec![]),
            List(vec![Float(0.0), Float(-0.0), Float(1e-40)]),
            List(vec![Bool(false), Bool(false), Bool(false)]),
            List(vec![]),
        ],
        vec![
            Bool(true),
            UInt(0),
            Float(0.1),
            String("ü".into()),
            List(vec![Record(vec![Float(1.0), Int(2)])]),
            Int(5),
            Null,
            Map(vec![
                (String("b".into()), Float(2.0)),
                (String("c".into()), Float(3.0)),
            ]),
            List(vec![Float(4.0), Float(5.0), Float(6.0)]),
            List(vec![Bool(true), Bool(true), Bool(true)]),
            List(vec![List(vec![Int(127)])]),
        ],
    ];
    let mut sink: Vec<u8> = Vec::new();
    let anchor = {
        let writer =
            RNTupleWriter::new(&mut sink, "rows", schema, WriteOptions::default()).unwrap();
        let mut rows = rntuple::write::EntryWriter::new(writer).unwrap();
        for e in &entries {
            rows.fill(e.clone()).unwrap();
        }
        assert!(
            rows.fill(vec![Bool(true)]).is_err(),
            "wrong arity is refused"
        );
        rows.finish().unwrap()
    };
    let back = common::reader_in_memory("rows", sink, anchor, "rows");
    let mut got = back.read_entries(None, 0..3).unwrap();
    // 1e-40 is a float subnormal: it comes back as the float nearest to it.
    if let List(xs) = &mut got[1][8] {
        assert_eq!(xs[2], Float(1e-40_f32 as f64));
        xs[2] = Float(1e-40);
    }
    assert_eq!(got, entries);
}

#[test]
fn char_values_keep_their_sign() {
    use rntuple::schema::{ColumnDefaults, SchemaBuilder, Value};
    let mut b = SchemaBuilder::new(ColumnDefaults { compressed: false });
    b.add_cpp_field("c", "char").unwrap();
    let mut sink: Vec<u8> = Vec::new();
    let chars = [-128i64, -56, -1, 0, 65, 127];
    let anchor = {
        let writer =
            RNTupleWriter::new(&mut sink, "chars", b.finish(), WriteOptions::default()).unwrap();
        let mut rows = rntuple::write::EntryWriter::new(writer).unwrap();
        for c in chars {
            rows.fill(vec![Value::Int(c)]).unwrap();
        }
        rows.finish().unwrap()
    };
    let bytes = sink.clone();
    let back = common::reader_in_memory("c", bytes, anchor, "c");
    let got: Vec<Value> = back
        .read_entries(None, 0..6)
        .unwrap()
        .into_iter()
        .map(|mut r| r.remove(0))
        .collect();
    assert_eq!(
        got,
        chars.iter().map(|&c| Value::Int(c)).collect::<Vec<_>>()
    );
    // On disk the Char column holds the two's complement byte, as ROOT writes `char`.
    let raw = &sink;
    assert!(raw
        .windows(6)
        .any(|w| w == [0x80, 0xC8, 0xFF, 0x00, 0x41, 0x7F]));
}
