//! The schema builder against ROOT 6.40: the field and column records it produces must
//! equal, record by record, those ROOT writes for the same C++ types (ground truth in
//! tests/data/schema_builder.*.root, made by tests/data/make_schema_builder.py, which
//! `root_regenerated_ground_truth` reruns); and Arrow fields the reader produces from
//! the conformance files must map back to the same records.

// Test code: a failed unwrap is a failed test; test data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use rntuple::format::{ColumnRecord, FieldRecord, SchemaDescription};
use rntuple::read::{arrow_field, RNTupleReader};
use rntuple::schema::{ClassSpec, ColumnDefaults, ColumnSpec, Descriptor, SchemaBuilder};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Builds the schema the generator's TSV asks for.
fn build_from_tsv(tsv: &str, compressed: bool) -> SchemaDescription {
    let mut b = SchemaBuilder::new(ColumnDefaults { compressed });
    for line in tsv.lines().filter(|l| !l.is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        match cols[0] {
            "enum" => b.register_enum(cols[1], cols[2]).unwrap(),
            "class" => {
                let members: Vec<(&str, &str)> = cols[2]
                    .split(';')
                    .filter(|m| !m.is_empty())
                    .map(|m| m.split_once(':').unwrap())
                    .collect();
                let bases: Vec<&str> = cols[3].split(',').filter(|b| !b.is_empty()).collect();
                let mut spec = ClassSpec::new(cols[1], &members, &bases);
                spec.type_version = cols[4].parse().unwrap();
                spec.checksum = Some(cols[5].parse().unwrap());
                b.register_class(spec).unwrap();
            }
            "field" => {
                b.add_cpp_field(cols[1], cols[2])
                    .unwrap_or_else(|e| panic!("{line}: {e}"));
            }
            "projected" => {
                b.add_projected_field(cols[1], cols[2], cols[3])
                    .unwrap_or_else(|e| panic!("{line}: {e}"));
            }
            other => panic!("unknown row kind {other}"),
        }
    }
    b.finish()
}

fn descriptor(path: &Path) -> Descriptor {
    RNTupleReader::open_path(path.to_str().unwrap(), None)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .descriptor()
        .clone()
}

/// Compares every field, column and alias-column record, naming the first difference.
fn assert_same_schema(ours: &SchemaDescription, root: &Descriptor, what: &str) {
    let mut problems = Vec::new();
    if ours.fields.len() != root.fields.len() {
        problems.push(format!(
            "{} fields built, ROOT wrote {}",
            ours.fields.len(),
            root.fields.len()
        ));
    }
    for (id, (a, b)) in ours.fields.iter().zip(&root.fields).enumerate() {
        if a != &b.record {
            problems.push(format!(
                "field {id} ({}):\n  ours {a:?}\n  ROOT {:?}",
                root.qualified_name(id as u32),
                b.record
            ));
        }
    }
    let root_columns: Vec<&ColumnRecord> = root.columns.iter().map(|c| &c.record).collect();
    if ours.columns.len() != root_columns.len() {
        problems.push(format!(
            "{} columns built, ROOT wrote {}",
            ours.columns.len(),
            root_columns.len()
        ));
    }
    for (id, (a, b)) in ours.columns.iter().zip(&root_columns).enumerate() {
        if a != *b {
            problems.push(format!("column {id}:\n  ours {a:?}\n  ROOT {b:?}"));
        }
    }
    // Alias columns: the descriptor lists a projected field's physical columns.
    for f in root.fields.iter().filter(|f| f.is_projected()) {
        let ours_alias: Vec<u32> = ours
            .alias_columns
            .iter()
            .filter(|a| a.field_id == f.id)
            .map(|a| a.physical_column_id)
            .collect();
        if ours_alias != f.columns {
            problems.push(format!(
                "alias columns of {}: ours {ours_alias:?}, ROOT {:?}",
                f.name(),
                f.columns
            ));
        }
    }
    let total_alias: usize = root
        .fields
        .iter()
        .filter(|f| f.is_projected())
        .map(|f| f.columns.len())
        .sum();
    if total_alias != ours.alias_columns.len() {
        problems.push(format!(
            "{} alias columns built, ROOT wrote {total_alias}",
            ours.alias_columns.len()
        ));
    }
    assert!(
        problems.is_empty(),
        "{what}: {} differences\n{}",
        problems.len(),
        problems.join("\n")
    );
}

fn check_ground_truth(dir: &Path) {
    let tsv = std::fs::read_to_string(dir.join("schema_builder.fields.tsv")).unwrap();
    for (file, compressed) in [
        ("schema_builder.zstd.root", true),
        ("schema_builder.none.root", false),
    ] {
        let root = descriptor(&dir.join(file));
        let ours = build_from_tsv(&tsv, compressed);
        assert_same_schema(&ours, &root, file);
    }
}

#[test]
fn records_equal_those_root_wrote() {
    check_ground_truth(&data_dir());
}

/// Reruns the generator with ROOT (PyROOT, ROOT 6.40 from PyPI) into a temporary
/// directory and compares again. Fails when ROOT is missing unless RNTUPLE_NO_ROOT is set.
#[test]
fn root_regenerated_ground_truth() {
    if !common::test_skips::root_checks_wanted(
        "rust: schema_builder::root_regenerated_ground_truth",
    ) {
        return;
    }
    let out = std::env::temp_dir().join(format!("rntuple-schema-builder-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let status = Command::new("python3")
        .arg(data_dir().join("make_schema_builder.py"))
        .arg(&out)
        .output()
        .expect("python3 must be installed (set RNTUPLE_NO_ROOT to skip)");
    assert!(
        status.status.success(),
        "the ROOT generator failed (is PyROOT installed? set RNTUPLE_NO_ROOT to skip):\n{}",
        String::from_utf8_lossy(&status.stderr)
    );
    check_ground_truth(&out);
    let _ = std::fs::remove_dir_all(&out);
}

/// A field subtree compared between a file and the builder: the differing attributes.
fn compare_subtree(
    root: &Descriptor,
    rid: u32,
    ours: &SchemaDescription,
    oid: u32,
    out: &mut Vec<String>,
    column_diffs: &mut Vec<(u32, u32)>,
) {
    let r = &root.field(rid).record;
    let o = &ours.fields[oid as usize];
    let path = root.qualified_name(rid);
    let mut diff = |what: &str, a: String, b: String| {
        if a != b {
            out.push(format!("{path}: {what}: ROOT {a}, ours {b}"));
        }
    };
    diff("name", r.name.clone(), o.name.clone());
    diff("type", r.type_name.clone(), o.type_name.clone());
    diff("alias", r.type_alias.clone(), o.type_alias.clone());
    diff("role", r.role.to_string(), o.role.to_string());
    diff("flags", r.flags.to_string(), o.flags.to_string());
    diff(
        "array size",
        format!("{:?}", r.array_size),
        format!("{:?}", o.array_size),
    );
    diff(
        "versions",
        format!("{}/{}", r.field_version, r.type_version),
        format!("{}/{}", o.field_version, o.type_version),
    );
    diff(
        "checksum",
        format!("{:?}", r.type_checksum),
        format!("{:?}", o.type_checksum),
    );
    let cols = |recs: Vec<&ColumnRecord>| {
        recs.iter()
            .map(|c| {
                format!(
                    "{:#x}/{}b/{:?}/r{}",
                    c.column_type, c.bits_on_storage, c.value_range, c.representation_index
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let rc = root
        .field(rid)
        .columns
        .iter()
        .map(|&c| &root.column(c).record)
        .collect();
    // A projected field shows its source's physical columns through alias columns.
    let aliased: Vec<&ColumnRecord> = ours
        .alias_columns
        .iter()
        .filter(|a| a.field_id == oid)
        .map(|a| &ours.columns[a.physical_column_id as usize])
        .collect();
    let oc = if aliased.is_empty() {
        ours.columns.iter().filter(|c| c.field_id == oid).collect()
    } else {
        aliased
    };
    let (rc, oc) = (cols(rc), cols(oc));
    if rc != oc {
        column_diffs.push((rid, oid));
    }
    diff("columns", rc, oc);
    let rch = &root.field(rid).children;
    let och: Vec<u32> = (0..ours.fields.len() as u32)
        .filter(|&i| i != oid && ours.fields[i as usize].parent_id == oid)
        .collect();
    if rch.len() != och.len() {
        out.push(format!(
            "{path}: ROOT has {} subfields, ours {}",
            rch.len(),
            och.len()
        ));
        return;
    }
    for (&a, &b) in rch.iter().zip(&och) {
        compare_subtree(root, a, ours, b, out, column_diffs);
    }
}

/// Differences an Arrow round trip cannot avoid, by what they concern.
fn expected_loss(line: &str) -> Option<&'static str> {
    if line.contains(": versions:")
        || line.contains(": checksum:")
        || line.contains(": flags: ROOT 4")
    {
        // Class version and TClass checksum are not in the Arrow schema.
        Some("class version / checksum")
    } else if line.contains(": alias:") && line.contains("Double32_t") {
        Some("Double32_t alias")
    } else if line.contains(": type: ROOT char, ours std::int8_t") {
        // An enum's Arrow field carries the enum's name, not its underlying type's, and
        // char and std::int8_t are both Arrow Int8.
        Some("enum underlying char")
    } else {
        None
    }
}

/// The column specs of a field as a file stores them.
fn file_columns(desc: &Descriptor, id: u32) -> Vec<ColumnSpec> {
    desc.field(id)
        .columns
        .iter()
        .map(|&c| {
            let r = &desc.column(c).record;
            ColumnSpec {
                column_type: rntuple::encoding::ColumnType::from_u16(r.column_type).unwrap(),
                bits_on_storage: Some(r.bits_on_storage),
                value_range: r.value_range,
            }
        })
        .collect()
}

#[test]
fn arrow_fields_of_conformance_files_round_trip() {
    let files = common::conformance_files();
    let mut unexpected = Vec::new();
    let mut losses: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut n_fields = 0;
    for path in &files {
        let Ok(reader) = RNTupleReader::open_path(path.to_str().unwrap(), None) else {
            continue; // e.g. the feature-flag file the reader refuses by design
        };
        let desc = reader.descriptor();
        // ROOT picks split encodings only for compressed data.
        let compressed = desc
            .clusters
            .iter()
            .flat_map(|c| c.columns.iter())
            .find_map(|c| c.compression)
            .is_none_or(|c| c != 0);
        let mut b = SchemaBuilder::new(ColumnDefaults { compressed });
        let mut pairs = Vec::new();
        let mut projected = Vec::new();
        for &id in &desc.top_level {
            let f = desc.field(id);
            if f.is_projected() {
                projected.push(id);
                continue;
            }
            let arrow = match arrow_field(desc, id, f.name()) {
                Ok(a) => a,
                Err(e) => {
                    losses
                        .entry("fields the reader gives no Arrow type")
                        .or_default()
                        .push(format!("{}:{}: {e}", file_name(path), f.name()));
                    continue;
                }
            };
            match b.add_arrow_field(&arrow) {
                Ok(oid) => pairs.push((id, oid)),
                Err(e) => unexpected.push(format!("{}:{}: {e}", file_name(path), f.name())),
            }
            n_fields += 1;
        }
        // Projected fields are not Arrow fields of their own: add them from the file's
        // type name and source path.
        for id in projected {
            let f = desc.field(id);
            // ROOT's mapping, read back from the file's source field ids.
            let mut map = BTreeMap::new();
            let mut stack = vec![id];
            while let Some(p) = stack.pop() {
                let fp = desc.field(p);
                if let Some(src) = fp.record.source_field_id {
                    map.insert(desc.qualified_name(p), desc.qualified_name(src));
                }
                stack.extend(fp.children.iter().copied());
            }
            let mapping = |p: &str| map.get(p).cloned().unwrap_or_default();
            match b.add_projected_field_mapped(f.name(), f.type_name(), &mapping) {
                Ok(oid) => pairs.push((id, oid)),
                Err(e) => unexpected.push(format!("{}:{}: {e}", file_name(path), f.name())),
            }
            n_fields += 1;
        }
        // First pass: the defaults. Column differences come from representations the
        // files chose explicitly (Index32, Real16, Real32Quant, ...), which Arrow types do
        // not carry: set_columns must accept ROOT's choice, after which none may remain.
        let ours = b.clone().finish();
        let mut column_diffs = Vec::new();
        for &(rid, oid) in &pairs {
            let mut out = Vec::new();
            compare_subtree(desc, rid, &ours, oid, &mut out, &mut column_diffs);
            for line in out {
                let line = format!("{}: {line}", file_name(path));
                if line.contains(": columns:") {
                    losses
                        .entry("explicitly chosen column types (re-applied with set_columns)")
                        .or_default()
                        .push(line);
                    continue;
                }
                match expected_loss(&line) {
                    Some(kind) => losses.entry(kind).or_default().push(line),
                    None => unexpected.push(line),
                }
            }
        }
        let enum_char = column_diffs
            .iter()
            .filter(|(rid, _)| desc.field(*rid).type_name() == "char")
            .count();
        for &(rid, oid) in &column_diffs {
            if desc.field(rid).is_projected() {
                continue; // follows its source's columns
            }
            if desc.field(rid).type_name() == "char" {
                continue; // the enum's underlying char above
            }
            if let Err(e) = b.set_columns(oid, &file_columns(desc, rid)) {
                unexpected.push(format!(
                    "{}: {}: set_columns refused ROOT's columns: {e}",
                    file_name(path),
                    desc.qualified_name(rid)
                ));
            }
        }
        let ours = b.finish();
        let mut remaining = Vec::new();
        for &(rid, oid) in &pairs {
            compare_subtree(desc, rid, &ours, oid, &mut Vec::new(), &mut remaining);
        }
        if remaining.len() != enum_char {
            unexpected.push(format!(
                "{}: columns still differ after set_columns: {:?}",
                file_name(path),
                remaining
                    .iter()
                    .map(|(r, _)| desc.qualified_name(*r))
                    .collect::<Vec<_>>()
            ));
        }
    }
    for (kind, lines) in &losses {
        eprintln!(
            "expected loss, {kind}: {} cases, e.g. {}",
            lines.len(),
            lines[0]
        );
    }
    assert!(n_fields > 100, "only {n_fields} fields checked");
    assert!(
        unexpected.is_empty(),
        "{} unexpected differences:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
}

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn set_columns_validates_against_the_spec() {
    let mut b = SchemaBuilder::new(ColumnDefaults::default());
    let f = b.add_cpp_field("f", "float").unwrap();
    let d = b.add_cpp_field("d", "double").unwrap();
    let i = b.add_cpp_field("i", "int").unwrap();
    let s = b.add_cpp_field("s", "std::string").unwrap();
    let v = b.add_cpp_field("v", "std::vector<bool>").unwrap();
    let a = b.add_cpp_field("a", "std::array<float,2>").unwrap();
    use rntuple::encoding::ColumnType as C;
    b.set_columns(f, &[ColumnSpec::new(C::Real16)]).unwrap();
    b.set_columns(d, &[ColumnSpec::quantized(20, -1.0, 1.0)])
        .unwrap();
    b.set_columns(i, &[ColumnSpec::new(C::Int32)]).unwrap();
    b.set_columns(s, &[ColumnSpec::new(C::Index32), ColumnSpec::new(C::Char)])
        .unwrap();
    b.set_columns(v, &[ColumnSpec::new(C::Index64)]).unwrap();
    // Refused: wrong type, wrong count, bad bits, missing or bad range, columnless field.
    assert!(b.set_columns(i, &[ColumnSpec::new(C::Real32)]).is_err());
    assert!(b.set_columns(i, &[ColumnSpec::new(C::Int64)]).is_err());
    assert!(b.set_columns(f, &[ColumnSpec::new(C::Real64)]).is_err());
    assert!(b.set_columns(s, &[ColumnSpec::new(C::Index64)]).is_err());
    assert!(b.set_columns(f, &[ColumnSpec::truncated(9)]).is_err());
    assert!(b
        .set_columns(f, &[ColumnSpec::quantized(33, 0.0, 1.0)])
        .is_err());
    assert!(b
        .set_columns(f, &[ColumnSpec::quantized(8, 1.0, 1.0)])
        .is_err());
    assert!(b
        .set_columns(f, &[ColumnSpec::quantized(8, 0.0, f64::NAN)])
        .is_err());
    let mut no_range = ColumnSpec::quantized(8, 0.0, 1.0);
    no_range.value_range = None;
    assert!(b.set_columns(f, &[no_range]).is_err());
    let mut range_on_real32 = ColumnSpec::new(C::Real32);
    range_on_real32.value_range = Some((0.0, 1.0));
    assert!(b.set_columns(f, &[range_on_real32]).is_err());
    assert!(b.set_columns(a, &[ColumnSpec::new(C::Real32)]).is_err());
    assert!(b.set_columns(99, &[]).is_err());
    let schema = b.finish();
    type Col = (u16, u16, u16, Option<(f64, f64)>);
    let col = |field: u32| -> Vec<Col> {
        schema
            .columns
            .iter()
            .filter(|c| c.field_id == field)
            .map(|c| (c.column_type, c.bits_on_storage, c.flags, c.value_range))
            .collect()
    };
    assert_eq!(col(f), vec![(0x0B, 16, 0, None)]);
    assert_eq!(col(d), vec![(0x1D, 20, 0x02, Some((-1.0, 1.0)))]);
    assert_eq!(col(s), vec![(0x0E, 32, 0, None), (0x02, 8, 0, None)]);
}

#[test]
fn the_real32_conformance_files_are_reproduced_with_set_columns() {
    for file in [
        "types.fundamental.real32quant.root",
        "types.fundamental.real32trunc.root",
    ] {
        let path = common::conformance_write_dir().join(file);
        let root = descriptor(&path);
        let mut b = SchemaBuilder::new(ColumnDefaults { compressed: true });
        for &id in &root.top_level {
            let f = root.field(id);
            let oid = b.add_cpp_field(f.name(), f.type_name()).unwrap();
            let specs: Vec<ColumnSpec> = f
                .columns
                .iter()
                .map(|&c| {
                    let r = &root.column(c).record;
                    let t = rntuple::encoding::ColumnType::from_u16(r.column_type).unwrap();
                    ColumnSpec {
                        column_type: t,
                        bits_on_storage: Some(r.bits_on_storage),
                        value_range: r.value_range,
                    }
                })
                .collect();
            b.set_columns(oid, &specs).unwrap();
        }
        let ours = b.finish();
        let records: Vec<&FieldRecord> = root.fields.iter().map(|f| &f.record).collect();
        assert_eq!(ours.fields.iter().collect::<Vec<_>>(), records, "{file}");
        let cols: Vec<&ColumnRecord> = root.columns.iter().map(|c| &c.record).collect();
        assert_eq!(ours.columns.iter().collect::<Vec<_>>(), cols, "{file}");
    }
}

#[test]
fn explicit_records_enums_untyped_and_errors() {
    let mut b = SchemaBuilder::new(ColumnDefaults { compressed: false });
    let e = b.add_enum("e", "ns::Color", "unsigned char").unwrap();
    let r = b
        .add_record("r", "ns::Point", &[("x", "float"), ("c", "ns::Color")], &[])
        .unwrap();
    let u = b
        .add_untyped_record("u", &[("a", "int"), ("p", "std::vector<ns::Point>")])
        .unwrap();
    let c = b.add_untyped_collection("uc", &[("a", "bool")]).unwrap();
    // Errors leave no partial fields behind.
    let before = b.fields().len();
    assert!(b.add_cpp_field("bad", "std::vector<Unknown>").is_err());
    assert!(b.add_cpp_field("bad", "std::array<int,0>").is_err());
    assert!(b.add_cpp_field("bad", "std::map<int>").is_err());
    assert!(b.add_cpp_field("bad", "std::variant<>").is_err());
    assert!(b
        .add_cpp_field("bad", "ROOT::RNTupleCardinality<std::uint32_t>")
        .is_err());
    assert!(b.add_cpp_field("e", "int").is_err(), "duplicate name");
    assert!(b.add_cpp_field("a.b", "int").is_err());
    assert!(b.add_projected_field("p", "float", "nope").is_err());
    assert!(b.add_projected_field("p", "double", "r.x").is_err());
    assert!(b
        .add_projected_field("p", "ROOT::RNTupleCardinality<std::uint32_t>", "r")
        .is_err());
    assert_eq!(b.fields().len(), before);
    let rec = b.register_class(ClassSpec::new("A", &[("v", "std::vector<A>")], &[]));
    assert!(rec.is_ok());
    assert!(b.add_cpp_field("rec", "A").is_err(), "recursive type");
    let px = b.add_projected_field("px", "float", "r.x").unwrap();
    let card = b
        .add_projected_field("n", "ROOT::RNTupleCardinality<std::uint64_t>", "uc")
        .unwrap();
    let s = b.finish();
    let f = |id: u32| &s.fields[id as usize];
    assert_eq!((f(e).role, f(e).type_name.as_str()), (0, "ns::Color"));
    assert_eq!(f(e + 1).type_name, "std::uint8_t");
    assert_eq!((f(r).role, f(r).type_version), (2, 1));
    assert_eq!(f(r + 2).type_name, "ns::Color");
    assert_eq!((f(u).role, f(u).type_name.as_str()), (2, ""));
    assert_eq!(f(u + 2).type_name, "std::vector<ns::Point>");
    assert_eq!(
        (f(c).role, f(c + 1).role, f(c + 1).name.as_str()),
        (1, 2, "_0")
    );
    assert_eq!(f(px).source_field_id, Some(r + 1));
    assert_eq!(f(card).source_field_id, Some(c));
    let x_col = s
        .columns
        .iter()
        .position(|col| col.field_id == r + 1)
        .unwrap() as u32;
    let c_col = s.columns.iter().position(|col| col.field_id == c).unwrap() as u32;
    let aliases: Vec<(u32, u32)> = s
        .alias_columns
        .iter()
        .map(|a| (a.physical_column_id, a.field_id))
        .collect();
    assert_eq!(aliases, vec![(x_col, px), (c_col, card)]);
}
