//! A selection the reader accepts must read: a path into a map's key or value
//! (`Index32._0._0` of a `std::map<std::string,std::int32_t>`) is accepted by
//! `select_fields` and `arrow_schema`, so `read` must give its values (or the selection
//! must be refused up front, as for an unknown field).
//!
//! Found by the `concurrent_read` test tool, which reads every nested path it finds; such a
//! path now keeps the whole (key, value) pair, as an Arrow map needs both.
//! By hand: `rntuple dump types.map.fundamental.root:ntpl --json --fields Index32._0._0`.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

mod common;

use rntuple::read::RNTupleReader;
use rntuple::schema::array_value;

#[test]
fn a_path_into_a_map_member_reads_or_is_refused_up_front() {
    let path = common::conformance_file("types.map.fundamental");
    let reader = RNTupleReader::open_path(path.to_str().unwrap(), Some("ntpl")).unwrap();
    // ROOT's reading (read/types.map.fundamental.json): {"a": 1}, {}, {"a": 1} ... per field.
    let mut failures = Vec::new();
    for (member, wanted) in [("Index32._0._0", "\"a\""), ("Index32._0._1", "1")] {
        let names = vec![member.to_string()];
        if reader.select_fields(Some(&names)).is_err() {
            continue; // refused up front: consistent
        }
        let schema = reader.arrow_schema(Some(&names)).unwrap();
        match reader.read(Some(&names), 0..reader.num_entries()) {
            Ok(batch) => {
                assert_eq!(batch.num_rows(), 3);
                let rows: Vec<String> = (0..3)
                    .map(|r| format!("{:?}", array_value(batch.column(0).as_ref(), r)))
                    .collect();
                assert!(rows[0].contains(wanted), "{member}: {rows:?}");
                assert!(!rows[1].contains(wanted), "{member}: {rows:?}");
            }
            Err(e) => failures.push(format!(
                "{member}: accepted (Arrow type {}) but does not read: {e}",
                schema.field(0).data_type()
            )),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
