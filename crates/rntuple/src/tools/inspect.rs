//! Where the bytes of an RNTuple go: per physical column and per field (summed over its
//! subfields), compressed and uncompressed sizes, elements and pages, with the figures
//! ROOT's `RNTupleInspector` gives (compressed: the page locators' sizes, checksums not
//! included; uncompressed: elements times the in-memory size of the column's element).

use crate::encoding::ColumnType;
use crate::read::RNTupleReader;
use crate::schema::Descriptor;

/// One physical column's storage.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStats {
    /// Physical column id.
    pub id: u32,
    /// The qualified name of its field.
    pub field: String,
    /// Its type's name (`SplitReal32`, ...).
    pub column_type: String,
    /// Elements over all clusters.
    pub elements: u64,
    /// Pages over all clusters.
    pub pages: u64,
    /// Bytes of its pages on storage (checksums not included).
    pub compressed: u64,
    /// Elements times the in-memory element size (as ROOT's inspector counts).
    pub uncompressed: u64,
}

/// One field's storage, its subfields' columns included.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldStats {
    /// Field id.
    pub id: u32,
    /// Qualified name (`Jet.pt`).
    pub name: String,
    /// C++ type name.
    pub type_name: String,
    /// Physical columns of the field and its subfields.
    pub columns: usize,
    /// Pages of those columns.
    pub pages: u64,
    /// Their compressed bytes.
    pub compressed: u64,
    /// Their uncompressed bytes.
    pub uncompressed: u64,
}

/// The storage of an RNTuple.
#[derive(Debug, Clone, PartialEq)]
pub struct Inspection {
    /// Per physical column, by id.
    pub columns: Vec<ColumnStats>,
    /// Per field (projected fields left out), by id.
    pub fields: Vec<FieldStats>,
    /// Sum of the columns' compressed bytes.
    pub compressed: u64,
    /// Sum of the columns' uncompressed bytes.
    pub uncompressed: u64,
}

impl Inspection {
    /// Uncompressed over compressed bytes (0 when nothing is stored).
    pub fn compression_factor(&self) -> f64 {
        if self.compressed == 0 {
            0.0
        } else {
            self.uncompressed as f64 / self.compressed as f64
        }
    }
}

/// Bytes of one element in memory, as ROOT's column elements hold it.
pub fn memory_element_size(t: ColumnType) -> u64 {
    use ColumnType as C;
    match t {
        C::Bit | C::Byte | C::Char | C::Int8 | C::UInt8 => 1,
        C::Int16 | C::UInt16 | C::SplitInt16 | C::SplitUInt16 => 2,
        C::Int32
        | C::UInt32
        | C::SplitInt32
        | C::SplitUInt32
        | C::Real32
        | C::SplitReal32
        | C::Real16
        | C::SplitReal16
        | C::Real32Trunc
        | C::Real32Quant => 4,
        C::Switch => 16,
        _ => 8,
    }
}

/// Inspects the RNTuple `reader` opened (no page is read: the page lists say it all).
pub fn inspect(reader: &RNTupleReader) -> Inspection {
    inspect_descriptor(reader.descriptor())
}

/// Like [`inspect`], from a descriptor.
pub fn inspect_descriptor(d: &Descriptor) -> Inspection {
    let mut columns: Vec<ColumnStats> = d
        .columns
        .iter()
        .map(|c| ColumnStats {
            id: c.id,
            field: d.qualified_name(c.record.field_id),
            column_type: ColumnType::from_u16(c.record.column_type).map_or_else(
                || format!("0x{:02x}", c.record.column_type),
                |t| t.name().to_string(),
            ),
            elements: 0,
            pages: 0,
            compressed: 0,
            uncompressed: 0,
        })
        .collect();
    for cluster in &d.clusters {
        for (id, pages) in cluster.columns.iter().enumerate() {
            if pages.is_suppressed() {
                continue;
            }
            let Some(stats) = columns.get_mut(id) else {
                continue;
            };
            stats.elements += pages.n_elements();
            stats.pages += pages.pages.len() as u64;
            stats.compressed += pages.pages.iter().map(|p| p.locator.size).sum::<u64>();
        }
    }
    for (stats, c) in columns.iter_mut().zip(&d.columns) {
        let size = ColumnType::from_u16(c.record.column_type).map_or(0, memory_element_size);
        stats.uncompressed = stats.elements * size;
    }
    let mut fields = Vec::new();
    for f in &d.fields {
        if f.is_projected() {
            continue;
        }
        let mut ids = Vec::new();
        collect_columns(d, f.id, &mut ids);
        let pick = |get: fn(&ColumnStats) -> u64| -> u64 {
            ids.iter()
                .filter_map(|&i| columns.get(i as usize))
                .map(get)
                .sum()
        };
        fields.push(FieldStats {
            id: f.id,
            name: d.qualified_name(f.id),
            type_name: f.type_name().to_string(),
            columns: ids.len(),
            pages: pick(|c| c.pages),
            compressed: pick(|c| c.compressed),
            uncompressed: pick(|c| c.uncompressed),
        });
    }
    let compressed = columns.iter().map(|c| c.compressed).sum();
    let uncompressed = columns.iter().map(|c| c.uncompressed).sum();
    Inspection {
        columns,
        fields,
        compressed,
        uncompressed,
    }
}

/// The physical columns of field `id` and its subfields (not through projections).
fn collect_columns(d: &Descriptor, id: u32, out: &mut Vec<u32>) {
    let f = d.field(id);
    if f.is_projected() {
        return;
    }
    out.extend(
        d.columns
            .iter()
            .filter(|c| c.record.field_id == id)
            .map(|c| c.id),
    );
    for &child in &f.children {
        collect_columns(d, child, out);
    }
}
