//! `Reader.metadata()`: an RNTuple's anchor, header, footer and page lists as the
//! descriptor holds them, as plain Python dicts and lists, for the Python package's
//! metadata objects (`RNTuple.header`, `.footer`, `.page_link_list`, ...).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use rntuple::encoding::ColumnValues;
use rntuple::format::{Anchor, ColumnPages};
use rntuple::schema::Descriptor;

/// The anchor's members by ROOT's names of them (`fVersionEpoch`, `fSeekHeader`, ...).
fn anchor_dict<'py>(py: Python<'py>, a: &Anchor) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("fVersionEpoch", a.version_epoch)?;
    d.set_item("fVersionMajor", a.version_major)?;
    d.set_item("fVersionMinor", a.version_minor)?;
    d.set_item("fVersionPatch", a.version_patch)?;
    d.set_item("fSeekHeader", a.seek_header)?;
    d.set_item("fNBytesHeader", a.nbytes_header)?;
    d.set_item("fLenHeader", a.len_header)?;
    d.set_item("fSeekFooter", a.seek_footer)?;
    d.set_item("fNBytesFooter", a.nbytes_footer)?;
    d.set_item("fLenFooter", a.len_footer)?;
    d.set_item("fMaxKeySize", a.max_key_size)?;
    Ok(d)
}

/// One column's pages in one cluster: `pages` as `(n_elements, has_checksum, offset,
/// size)`, `element_offset` and `compression` (both `None` when suppressed).
fn column_pages<'py>(py: Python<'py>, c: &ColumnPages) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let pages: Vec<(u32, bool, u64, u64)> = c
        .pages
        .iter()
        .map(|p| {
            (
                p.n_elements,
                p.has_checksum,
                p.locator.offset,
                p.locator.size,
            )
        })
        .collect();
    d.set_item("pages", pages)?;
    d.set_item("element_offset", c.element_offset)?;
    d.set_item("compression", c.compression)?;
    Ok(d)
}

/// Everything the descriptor knows of the RNTuple's metadata, with the anchor.
pub(crate) fn metadata<'py>(
    py: Python<'py>,
    anchor: &Anchor,
    d: &Descriptor,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("anchor", anchor_dict(py, anchor)?)?;
    out.set_item("name", &d.name)?;
    out.set_item("description", &d.description)?;
    out.set_item("writer", &d.writer)?;
    out.set_item("header_checksum", d.header_checksum)?;
    let fields = PyList::empty(py);
    for f in &d.fields {
        let r = &f.record;
        let x = PyDict::new(py);
        x.set_item("field_version", r.field_version)?;
        x.set_item("type_version", r.type_version)?;
        x.set_item("parent_field_id", r.parent_id)?;
        x.set_item("struct_role", r.role)?;
        x.set_item("flags", r.flags)?;
        x.set_item("field_name", &r.name)?;
        x.set_item("type_name", &r.type_name)?;
        x.set_item("type_alias", &r.type_alias)?;
        x.set_item("field_desc", &r.description)?;
        x.set_item("repetition", r.array_size.unwrap_or(0))?;
        x.set_item("source_field_id", r.source_field_id)?;
        x.set_item("checksum", r.type_checksum)?;
        x.set_item("from_extension", f.from_extension)?;
        fields.append(x)?;
    }
    out.set_item("fields", fields)?;
    let columns = PyList::empty(py);
    for c in &d.columns {
        let r = &c.record;
        let x = PyDict::new(py);
        x.set_item("type", r.column_type)?;
        x.set_item("nbits", r.bits_on_storage)?;
        x.set_item("field_id", r.field_id)?;
        x.set_item("flags", r.flags)?;
        x.set_item("repr_idx", r.representation_index)?;
        x.set_item("first_element_index", r.first_element_index.unwrap_or(0))?;
        x.set_item("min_value", r.value_range.map(|v| v.0))?;
        x.set_item("max_value", r.value_range.map(|v| v.1))?;
        x.set_item("from_extension", c.from_extension)?;
        columns.append(x)?;
    }
    out.set_item("columns", columns)?;
    let extra = PyList::empty(py);
    for e in &d.extra_type_infos {
        let x = PyDict::new(py);
        x.set_item("content_id", e.content_id)?;
        x.set_item("type_ver", e.type_version)?;
        x.set_item("type_name", &e.type_name)?;
        extra.append(x)?;
    }
    out.set_item("extra_type_infos", extra)?;
    let groups = PyList::empty(py);
    for g in &d.cluster_groups {
        let x = PyDict::new(py);
        x.set_item("min_entry_num", g.min_entry)?;
        x.set_item("entry_span", g.entry_span)?;
        x.set_item("num_clusters", g.n_clusters)?;
        x.set_item("first_cluster", g.first_cluster)?;
        x.set_item("page_list_bytes", g.page_list_bytes)?;
        x.set_item("page_list_length", g.page_list_length)?;
        groups.append(x)?;
    }
    out.set_item("cluster_groups", groups)?;
    let clusters = PyList::empty(py);
    for c in &d.clusters {
        let x = PyDict::new(py);
        x.set_item("num_first_entry", c.first_entry)?;
        x.set_item("num_entries", c.n_entries)?;
        x.set_item("group", c.group)?;
        let columns = PyList::empty(py);
        for pages in &c.columns {
            columns.append(column_pages(py, pages)?)?;
        }
        x.set_item("columns", columns)?;
        clusters.append(x)?;
    }
    out.set_item("clusters", clusters)?;
    let sets = PyList::empty(py);
    for s in &d.attribute_sets {
        let x = PyDict::new(py);
        x.set_item("schema_version_major", s.schema_version_major)?;
        x.set_item("schema_version_minor", s.schema_version_minor)?;
        x.set_item("anchor_uncompressed_size", s.anchor_length)?;
        x.set_item("offset", s.anchor_locator.offset)?;
        x.set_item("num_bytes", s.anchor_locator.size)?;
        x.set_item("name", &s.name)?;
        sets.append(x)?;
    }
    out.set_item("attribute_sets", sets)?;
    Ok(out)
}

/// A column's decoded elements as `(NumPy dtype, little-endian bytes)`: a switch column's
/// as records of an 8-byte index and a 4-byte tag.
pub(crate) fn column_values_bytes<'py>(
    py: Python<'py>,
    values: &ColumnValues,
) -> (&'static str, Bound<'py, PyBytes>) {
    fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|&x| f(x)).collect()
    }
    let (dtype, bytes) = match values {
        ColumnValues::Bool(v) => ("bool", v.iter().map(|&b| u8::from(b)).collect()),
        ColumnValues::I8(v) => ("int8", le(v, i8::to_le_bytes)),
        ColumnValues::U8(v) => ("uint8", v.clone()),
        ColumnValues::I16(v) => ("<i2", le(v, i16::to_le_bytes)),
        ColumnValues::U16(v) => ("<u2", le(v, u16::to_le_bytes)),
        ColumnValues::I32(v) => ("<i4", le(v, i32::to_le_bytes)),
        ColumnValues::U32(v) => ("<u4", le(v, u32::to_le_bytes)),
        ColumnValues::I64(v) => ("<i8", le(v, i64::to_le_bytes)),
        ColumnValues::U64(v) | ColumnValues::Index(v) => ("<u8", le(v, u64::to_le_bytes)),
        ColumnValues::F32(v) => ("<f4", le(v, f32::to_le_bytes)),
        ColumnValues::F64(v) => ("<f8", le(v, f64::to_le_bytes)),
        ColumnValues::Switch { index, tag } => (
            "switch",
            index
                .iter()
                .zip(tag)
                .flat_map(|(i, t)| i.to_le_bytes().into_iter().chain(t.to_le_bytes()))
                .collect(),
        ),
    };
    (dtype, PyBytes::new(py, &bytes))
}
