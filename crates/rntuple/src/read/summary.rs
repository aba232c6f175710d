//! Text summaries of an open RNTuple: the schema tree (fields, C++ types, column
//! representations), cluster groups, clusters and sizes, as `rntuple info` and the
//! Python package's `show()` print them.

use super::RNTupleReader;
use crate::encoding::ColumnType;
use crate::schema::Descriptor;
use std::fmt::Write;

fn column_label(d: &Descriptor, id: u32) -> String {
    let rec = &d.column(id).record;
    let name = ColumnType::from_u16(rec.column_type)
        .map(|t| t.name().to_string())
        .unwrap_or_else(|| format!("unknown({:#x})", rec.column_type));
    let mut label = name;
    if matches!(
        ColumnType::from_u16(rec.column_type),
        Some(ColumnType::Real32Trunc | ColumnType::Real32Quant)
    ) {
        label.push_str(&format!("({} bits)", rec.bits_on_storage));
    }
    if let Some((min, max)) = rec.value_range {
        label.push_str(&format!("[{min}, {max}]"));
    }
    if let Some(first) = rec.first_element_index {
        label.push_str(&format!(" deferred from {first}"));
    }
    label
}

fn write_field(out: &mut String, d: &Descriptor, id: u32, depth: usize) -> std::fmt::Result {
    let f = d.field(id);
    let reps: Vec<String> = d
        .representations(id)
        .iter()
        .map(|rep| {
            rep.iter()
                .map(|&c| column_label(d, c))
                .collect::<Vec<_>>()
                .join(" + ")
        })
        .collect();
    let mut line = format!("{}{} : {}", "  ".repeat(depth + 1), f.name(), f.type_name());
    if !f.record.type_alias.is_empty() {
        line.push_str(&format!(" (alias {})", f.record.type_alias));
    }
    if let Some(src) = f.record.source_field_id {
        line.push_str(&format!(" (projected from {})", d.qualified_name(src)));
    }
    if !reps.is_empty() {
        line.push_str(&format!("  [{}]", reps.join(" | ")));
    }
    writeln!(out, "{line}")?;
    for &c in &f.children {
        write_field(out, d, c, depth + 1)?;
    }
    Ok(())
}

/// The schema tree: one line per field (indented by depth) with its C++ type, alias,
/// projection source and column representations.
pub fn schema_tree(d: &Descriptor) -> String {
    let mut out = String::new();
    for &id in &d.top_level {
        // Writing into a String cannot fail.
        let _ = write_field(&mut out, d, id, 0);
    }
    out
}

/// The uncompressed size of all pages (elements times bits on storage), in bytes.
pub fn uncompressed_bytes(d: &Descriptor) -> u64 {
    d.clusters
        .iter()
        .flat_map(|c| {
            // The cluster's columns are the first ones of the schema (Descriptor::build
            // checks), so their ids are those of d.columns.
            d.columns
                .iter()
                .take(c.columns.len())
                .map(move |col| d.column_bytes(c, col.id))
        })
        .sum()
}

/// A line naming the pages' locator types when any is not a file's (objects of an
/// object store; a type this reader does not know, whose pages cannot be read).
fn write_locator_kinds(out: &mut String, d: &Descriptor) -> std::fmt::Result {
    use crate::format::LocatorKind;
    use std::collections::BTreeMap;
    let mut counts: BTreeMap<(u8, u8), u64> = BTreeMap::new();
    for p in d
        .clusters
        .iter()
        .flat_map(|c| c.columns.iter().flat_map(|cp| cp.pages.iter()))
    {
        if p.locator.kind != LocatorKind::File {
            *counts
                .entry((p.locator.type_code(), p.locator.reserved))
                .or_default() += 1;
        }
    }
    if counts.is_empty() {
        return Ok(());
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(&(code, reserved), n)| {
            let reserved = if reserved == 0 {
                String::new()
            } else {
                format!(", reserved {reserved:#04x}")
            };
            if code == 0x02 {
                format!("{n} object (type 0x02{reserved})")
            } else {
                format!("{n} of unknown type {code:#04x}{reserved} (their pages cannot be read)")
            }
        })
        .collect();
    writeln!(out, "page locators: {}", parts.join(", "))
}

/// The whole description of an RNTuple: name, version, entries, schema tree, cluster
/// groups, clusters, sizes, attribute sets and warnings.
pub fn describe(reader: &RNTupleReader) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_description(&mut out, reader);
    // Names, types and texts from the file: their control characters escaped.
    out.split_inclusive('\n')
        .map(|line| match line.strip_suffix('\n') {
            Some(text) => format!("{}\n", crate::error::printable(text)),
            None => crate::error::printable(line).into_owned(),
        })
        .collect()
}

fn write_description(out: &mut String, reader: &RNTupleReader) -> std::fmt::Result {
    let d = reader.descriptor();
    let (e, ma, mi, pa) = d.version;
    writeln!(
        out,
        "RNTuple \"{}\" in {}",
        reader.path(),
        reader.source().name()
    )?;
    writeln!(
        out,
        "  format version {e}.{ma}.{mi}.{pa}, written by {}",
        d.writer
    )?;
    if !d.description.is_empty() {
        writeln!(out, "  description: {}", d.description)?;
    }
    writeln!(out, "entries: {}", d.n_entries)?;
    writeln!(out, "fields:")?;
    out.push_str(&schema_tree(d));
    let uncompressed = uncompressed_bytes(d);
    let compressed = d.compressed_bytes();
    writeln!(out, "cluster groups: {}", d.cluster_groups.len())?;
    for (i, g) in d.cluster_groups.iter().enumerate() {
        writeln!(
            out,
            "  group {i}: entries {}..{}, clusters {}..{}",
            g.min_entry,
            g.min_entry + g.entry_span,
            g.first_cluster,
            g.first_cluster + g.n_clusters
        )?;
    }
    writeln!(out, "clusters: {}", d.clusters.len())?;
    for c in &d.clusters {
        let pages: usize = c.columns.iter().map(|cp| cp.pages.len()).sum();
        let bytes: u64 = c
            .columns
            .iter()
            .flat_map(|cp| cp.pages.iter())
            .map(|p| p.locator.size)
            .sum();
        writeln!(
            out,
            "  cluster {}: entries {}..{}, {pages} pages, {bytes} bytes",
            c.id,
            c.first_entry,
            c.first_entry + c.n_entries
        )?;
    }
    write_locator_kinds(out, d)?;
    writeln!(out, "compressed size: {compressed} bytes")?;
    writeln!(out, "uncompressed size: {uncompressed} bytes")?;
    if compressed > 0 {
        writeln!(
            out,
            "compression factor: {:.2}",
            uncompressed as f64 / compressed as f64
        )?;
    }
    for a in &d.attribute_sets {
        writeln!(out, "attribute set: {}", a.name)?;
    }
    for w in &d.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}
