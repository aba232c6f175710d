//! Streamer fields (ROOT's `RStreamerField`, role 4) and the streamer infos they carry in
//! the extra type information, against `tests/data/streamer_fields.root` (ROOT 6.40,
//! `tests/data/make_streamer_fields.C`: `TLorentzVector` and
//! `std::vector<TLorentzVector>` stored whole).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use arrow_array::{Array, Float64Array, LargeListArray, RecordBatch, StructArray};
use rntuple::container::streamer_info_object;
use rntuple::read::RNTupleReader;
use rntuple::ttree::parse_streamer_info_object;
use std::path::Path;

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn streamer_infos_read_from_roots_file_stream_back_to_the_same_bytes() {
    let reader = RNTupleReader::open_path(&data("streamer_fields.root"), Some("t")).unwrap();
    let extra = &reader.descriptor().extra_type_infos;
    assert_eq!(extra.len(), 1, "{extra:?}");
    let record = &extra[0];
    // ROOT's kStreamerInfo: for every class, no type name or version of its own.
    assert_eq!(
        (
            record.content_id,
            record.type_version,
            record.type_name.as_str()
        ),
        (0, 0, "")
    );
    let infos = parse_streamer_info_object(&record.content, "extra type information").unwrap();
    let classes: Vec<(&str, i32)> = infos
        .iter()
        .map(|i| (i.class_name.as_str(), i.class_version))
        .collect();
    assert_eq!(classes, [("TLorentzVector", 4), ("TVector3", 3)]);
    // TLorentzVector: the TObject base (its checksum kept where ROOT keeps it), fP, fE.
    let tlv = &infos[0];
    let elements: Vec<(&str, &str, i32)> = tlv
        .elements
        .iter()
        .map(|e| (e.element_class.as_str(), e.name.as_str(), e.type_code))
        .collect();
    assert_eq!(
        elements,
        [
            ("TStreamerBase", "TObject", 66),
            ("TStreamerObject", "fP", 61),
            ("TStreamerBasicType", "fE", 8),
        ]
    );
    assert_eq!(tlv.elements[0].max_index[1] as u32, 2_417_737_773);
    assert_eq!(tlv.checksum, 3_823_026_593);
    let ours = streamer_info_object(&infos).unwrap();
    assert_eq!(ours.len(), record.content.len());
    assert_eq!(ours, record.content);
}

/// A TLorentzVector record's row: its fP (a TVector3: TObject, fX, fY, fZ) and fE.
fn lorentz(s: &StructArray, row: usize) -> [f64; 4] {
    let p = s
        .column_by_name("fP")
        .unwrap()
        .as_any()
        .downcast_ref::<StructArray>()
        .unwrap();
    let get = |a: &StructArray, name: &str| {
        a.column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap()
            .value(row)
    };
    [get(p, "fX"), get(p, "fY"), get(p, "fZ"), get(s, "fE")]
}

/// Checks that `batch`, entries from `first`, holds the objects make_streamer_fields.C
/// filled, decoded into records.
fn assert_filled_objects(batch: &RecordBatch, first: usize) {
    let p4 = batch
        .column_by_name("p4")
        .unwrap()
        .as_any()
        .downcast_ref::<StructArray>()
        .unwrap();
    let vp4 = batch
        .column_by_name("vp4")
        .unwrap()
        .as_any()
        .downcast_ref::<LargeListArray>()
        .unwrap();
    for row in 0..batch.num_rows() {
        let i = first + row;
        let x = i as f64;
        // make_streamer_fields.C: SetPxPyPzE(i, 2i, 3i, 4i + 1).
        assert_eq!(lorentz(p4, row), [x, 2.0 * x, 3.0 * x, 4.0 * x + 1.0]);
        let items = vp4.value(row);
        let items = items.as_any().downcast_ref::<StructArray>().unwrap();
        assert_eq!(items.len(), i);
        for j in 0..i {
            let y = j as f64;
            assert_eq!(lorentz(items, j), [y, y + 1.0, y + 2.0, y + 10.0]);
        }
    }
}

#[test]
fn streamer_fields_decode_into_the_objects_root_filled() {
    use rntuple::streamer_fields::StreamerFields;
    let reader = RNTupleReader::open_path(&data("streamer_fields.root"), Some("t")).unwrap();
    let fields = StreamerFields::new(reader.descriptor()).unwrap();
    assert!(!fields.is_empty());
    let batch = reader.read(None, 0..3).unwrap();
    let decoded = fields.decode(&batch, 0).unwrap();
    assert_filled_objects(&decoded, 0);
}

#[test]
fn reads_hand_back_streamer_objects_as_the_option_says() {
    use arrow_schema::DataType;
    use rntuple::read::RecordPaths;
    use rntuple::streamer_fields::StreamerObjects;
    let reader = RNTupleReader::open_path(&data("streamer_fields.root"), Some("t")).unwrap();
    let desc = reader.descriptor();
    let stored = reader.projection(None, RecordPaths::Columns).unwrap();
    // Records: the schema is the records', and every read decodes while it reads, over
    // any ranges (each range's entries numbered from its start).
    let records = StreamerObjects::Records
        .project(desc, stored.clone())
        .unwrap();
    assert!(matches!(
        records.schema().field_with_name("p4").unwrap().data_type(),
        DataType::Struct(_)
    ));
    let whole = reader.read_projection(&records, 0..3).unwrap();
    assert_eq!(whole.schema(), *records.schema());
    assert_filled_objects(&whole, 0);
    let ranges = reader
        .read_projection_ranges(&records, vec![0..1, 1..3, 2..2])
        .unwrap()
        .decode_ahead();
    let batches: Vec<RecordBatch> = ranges.map(Result::unwrap).collect();
    assert_eq!(
        batches
            .iter()
            .map(RecordBatch::num_rows)
            .collect::<Vec<_>>(),
        [1, 2, 0]
    );
    assert_filled_objects(&batches[0], 0);
    assert_filled_objects(&batches[1], 1);
    assert_eq!(batches[2].schema(), *records.schema());
    // Bytes: the projection and its reads as stored.
    let bytes = StreamerObjects::Bytes
        .project(desc, stored.clone())
        .unwrap();
    assert_eq!(bytes.schema(), stored.schema());
    let raw = reader.read_projection(&bytes, 0..3).unwrap();
    assert_eq!(
        raw.column_by_name("p4").unwrap().data_type(),
        &DataType::LargeBinary
    );
    assert_eq!(raw, reader.read(None, 0..3).unwrap());
    // A selection without streamer fields, or only one of them, reads the same way.
    let one = reader
        .projection(Some(&["vp4".to_string()]), RecordPaths::Columns)
        .unwrap();
    let one = StreamerObjects::Records.project(desc, one).unwrap();
    let batch = reader.read_projection(&one, 1..3).unwrap();
    assert_eq!(batch.num_columns(), 1);
    assert!(matches!(
        batch.column(0).data_type(),
        DataType::LargeList(_)
    ));
}
