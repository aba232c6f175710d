//! Tests of the inspection: labels, figures and tables.

use super::*;
use crate::format::FieldRecord;
use crate::schema::FieldRole;

#[test]
fn collections_are_labelled_by_their_members() {
    let label = |members: &[&str]| collection_label("_collection8", members);
    assert_eq!(
        label(&["Jet_pt", "Jet_eta", "Jet_phi", "Jet_mass"]),
        "Jet_* (_collection8)"
    );
    // The shared prefix "Muon_p" is cut after its last separator.
    assert_eq!(label(&["Muon_pt", "Muon_phi"]), "Muon_* (_collection8)");
    assert_eq!(label(&["Jet.pt", "Jet.eta"]), "Jet.* (_collection8)");
    // Without a separator, the prefix as it is.
    assert_eq!(label(&["a1", "a2", "a3"]), "a* (_collection8)");
    assert_eq!(label(&["Jét_pt", "Jét_eta"]), "Jét_* (_collection8)");
    assert_eq!(label(&["m1"]), "m1 (_collection8)");
    assert_eq!(label(&[]), "_collection8");
    // No prefix (or separators only): the first names.
    assert_eq!(
        label(&["x", "y", "z", "w"]),
        "{x, y, z, ...} (_collection8)"
    );
    assert_eq!(label(&["alpha", "beta"]), "{alpha, beta} (_collection8)");
    assert_eq!(label(&["_x", "_y"]), "{_x, _y} (_collection8)");
    assert_eq!(
        // 33 characters: 29 and "...".
        label(&["energy_deposit_in_the_calorimeter", "time_of_flight", "z"]),
        "{energy_deposit_in_the_calorim..., ...} (_collection8)"
    );
    assert_eq!(
        label(&["electron_energy", "time_of_flight", "z"]),
        "{electron_energy, time_of_flight, ...} (_collection8)"
    );
}

/// A field record: `parent` is its own id for a top-level field.
fn field(name: &str, parent: u32, role: FieldRole, source: Option<u32>) -> FieldRecord {
    FieldRecord {
        parent_id: parent,
        role: role.code(),
        name: name.into(),
        source_field_id: source,
        flags: if source.is_some() {
            crate::format::FIELD_FLAG_PROJECTED
        } else {
            0
        },
        ..FieldRecord::default()
    }
}

#[test]
fn importer_collections_and_their_records_are_labelled() {
    use FieldRole::{Collection, Leaf, Record};
    let fields = vec![
        field("run", 0, Leaf, None),
        field("_collection0", 1, Collection, None),
        field("_0", 1, Record, None),
        field("Jet_pt", 2, Leaf, None),
        field("Jet_eta", 2, Leaf, None),
        field("Jet_pt", 5, Collection, Some(1)),
        field("nJet", 6, Leaf, Some(1)),
        // Not the importer's: a named collection, and a _collection of leaves.
        field("Muon", 7, Collection, None),
        field("_0", 7, Record, None),
        field("Muon_pt", 8, Leaf, None),
        field("_collection12", 10, Collection, None),
        field("_0", 10, Leaf, None),
        field("_collection1", 12, Collection, None),
        field("_0", 12, Record, None),
        field("x", 13, Leaf, None),
        field("y", 13, Leaf, None),
    ];
    let header = crate::format::Header {
        name: "t".into(),
        description: String::new(),
        writer: String::new(),
        schema: crate::format::SchemaDescription {
            fields,
            ..Default::default()
        },
    };
    let d = Descriptor::build(
        (1, 0, 0, 0),
        header,
        crate::format::Footer::default(),
        Vec::new(),
    )
    .unwrap();
    assert_eq!(
        field_labels(&d),
        vec![
            "run",
            "Jet_* (_collection0)",
            "Jet_* (_collection0._0)",
            "_collection0._0.Jet_pt",
            "_collection0._0.Jet_eta",
            "Jet_pt",
            "nJet",
            "Muon",
            "Muon._0",
            "Muon._0.Muon_pt",
            "_collection12",
            "_collection12._0",
            "{x, y} (_collection1)",
            "{x, y} (_collection1._0)",
            "_collection1._0.x",
            "_collection1._0.y",
        ]
    );
}

/// An inspection of fields `(name, parent, compressed, uncompressed, pages)` (ids in
/// order) in a file of 1000 bytes.
fn of_fields(fields: &[(&str, Option<u32>, u64, u64, u64)]) -> Inspection {
    Inspection {
        columns: Vec::new(),
        fields: fields
            .iter()
            .enumerate()
            .map(
                |(id, &(name, parent, compressed, uncompressed, pages))| FieldStats {
                    id: id as u32,
                    name: name.into(),
                    label: format!("label of {name}"),
                    parent,
                    type_name: "float".into(),
                    columns: 1,
                    pages,
                    compressed,
                    uncompressed,
                },
            )
            .collect(),
        types: Vec::new(),
        compressed: 0,
        uncompressed: 0,
        pages: 0,
        stored_page_bytes: 0,
        shared_pages: 0,
        checksum_bytes: 0,
        zero_pages: 0,
        zero_page_bytes: 0,
        entries: 0,
        clusters: 0,
        cluster_groups: 0,
        header: EnvelopeSize::default(),
        footer: EnvelopeSize::default(),
        page_lists: EnvelopeSize::default(),
        file_bytes: 1000,
    }
}

/// The names of a table's rows, and of its rest.
fn names(t: &Table) -> Vec<String> {
    let k = t.position("name").unwrap();
    t.rows
        .iter()
        .chain(t.rest.iter().map(|r| &r.cells))
        .map(|r| match &r[k] {
            Cell::Text(s) => s.clone(),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn tables_sort_among_siblings_and_keep_the_largest() {
    let i = of_fields(&[
        ("a", None, 10, 40, 1),
        ("b", None, 300, 600, 3),
        ("b.x", Some(1), 100, 300, 1),
        ("b.y", Some(1), 200, 300, 2),
        ("c", None, 50, 50, 2),
    ]);
    let t = i.arranged_table(By::Field, None, None);
    assert_eq!(names(&t), ["a", "b", "b.x", "b.y", "c"]);
    assert_eq!(t.parents, [None, None, Some(1), Some(1), None]);
    let t = i.arranged_table(By::Field, Some(SortKey::Size), None);
    assert_eq!(names(&t), ["b", "b.y", "b.x", "c", "a"]);
    assert_eq!(t.parents, [None, Some(0), Some(0), None, None]);
    // Factors: a 4, b 2, b.x 3, b.y 1.5, c 1: the worst first.
    let t = i.arranged_table(By::Field, Some(SortKey::Compression), None);
    assert_eq!(names(&t), ["c", "b", "b.y", "b.x", "a"]);
    let t = i.arranged_table(By::Field, Some(SortKey::Pages), None);
    assert_eq!(names(&t), ["b", "b.y", "b.x", "c", "a"]);
    // Ties keep the file's order.
    let t = i.arranged_table(By::Field, Some(SortKey::Uncompressed), None);
    assert_eq!(names(&t), ["b", "b.x", "b.y", "c", "a"]);
    let t = i.arranged_table(By::Field, Some(SortKey::Name), None);
    assert_eq!(names(&t), ["a", "b", "b.x", "b.y", "c"]);

    // --top: top-level fields only, the rest summed.
    let t = i.arranged_table(By::Field, None, Some(1));
    assert_eq!(names(&t), ["b", "... 2 more fields"]);
    assert_eq!(t.parents, [None]);
    let rest = t.rest.as_ref().unwrap();
    assert_eq!(rest.rows, 2);
    let at = |name: &str| rest.cells[t.position(name).unwrap()].clone();
    assert_eq!(at("label"), Cell::Text("... 2 more fields".into()));
    assert_eq!(at("type"), Cell::Empty);
    assert_eq!(
        (
            at("columns"),
            at("compressed"),
            at("uncompressed"),
            at("pages")
        ),
        (
            Cell::Count(2),
            Cell::Count(60),
            Cell::Count(90),
            Cell::Count(3)
        )
    );
    assert_eq!(
        at("compression_factor"),
        Cell::Factor {
            uncompressed: 90,
            compressed: 60
        }
    );
    assert_eq!(at("average_page_size"), Cell::Average(20.0));
    assert_eq!(at("share"), Cell::Fraction(0.06));
    let t = i.arranged_table(By::Field, Some(SortKey::Name), Some(2));
    assert_eq!(names(&t), ["a", "b", "... 1 more field"]);
    let t = i.arranged_table(By::Field, None, Some(3));
    assert_eq!(names(&t), ["b", "c", "a"]);
    assert_eq!(t.rest, None);
    let t = i.arranged_table(By::Field, None, Some(0));
    assert_eq!(names(&t), ["... 3 more fields"]);
}

#[test]
fn root_binning_puts_the_largest_in_the_last_bin() {
    let h = Histogram::root_binning(&[10, 20, 30, 74], 64);
    assert_eq!(h.low, 10.0);
    assert_eq!(h.high, 75.0);
    assert_eq!(h.counts.len(), 64);
    assert_eq!(
        (h.counts[0], h.counts[9], h.counts[19], h.counts[63]),
        (1, 1, 1, 1)
    );
    assert_eq!((h.underflow, h.overflow), (0, 0));
    assert_eq!(h.edge(64), 75.0);
}

#[test]
fn equal_sizes_overflow_as_in_root() {
    let h = Histogram::root_binning(&[5, 5], 64);
    assert_eq!((h.low, h.high, h.overflow), (5.0, 5.0, 2));
    assert_eq!(h.counts.iter().sum::<u64>(), 0);
    let empty = Histogram::root_binning(&[], 8);
    assert_eq!(empty.counts, vec![0; 8]);
}

#[test]
fn summary_quantiles_interpolate() {
    let s = Summary::of(&[4, 1, 3, 2]);
    assert_eq!((s.pages, s.min, s.max, s.mean), (4, 1, 4, 2.5));
    assert_eq!(s.median(), 2.5);
    assert!((s.quantiles[0] - 1.3).abs() < 1e-12);
    assert_eq!(Summary::of(&[]).median(), 0.0);
}

#[test]
fn zero_pages_hold_64_kib_in_memory() {
    let z = zero_pages_of(ColumnType::SplitInt64.as_u16(), 10_000);
    assert_eq!(z.sizes().collect::<Vec<_>>(), vec![8192, 1808]);
    let bits = zero_pages_of(ColumnType::Bit.as_u16(), 65_536);
    assert_eq!(bits.sizes().collect::<Vec<_>>(), vec![65_536]);
    assert_eq!(zero_pages_of(ColumnType::Real32.as_u16(), 0).pages, 0);
}

#[test]
fn factors_follow_root() {
    assert_eq!(compression_factor(0, 0), 1.0);
    assert_eq!(root_compression_factor(10, 4), 2.5);
    assert_eq!(compression_factor(10, 4), 2.5);
}
