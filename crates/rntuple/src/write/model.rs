//! Schemas to write: a copy's (the source's fields with the same types and column
//! types), and a schema extended after entries were written (late model extension).

use super::cluster::FORMAT_VERSION;
use crate::error::{Error, Result};
use crate::format::COLUMN_FLAG_DEFERRED;
use crate::format::{u32_len, AliasColumnRecord, Footer, Header, SchemaDescription};
use crate::schema::Descriptor;
use std::collections::HashMap;

/// The schema of `desc` for writing its values again: every field (schema extension
/// included, all in the header), and per field the column representation its first
/// cluster uses (one representation, no deferred columns: a copy writes every value).
pub fn schema_for_copy(desc: &Descriptor) -> Result<SchemaDescription> {
    let fields = desc.fields.iter().map(|f| f.record.clone()).collect();
    let first_cluster = desc.clusters.first();
    let chosen = |id: u32| -> Vec<u32> {
        let reps = desc.representations(id);
        if let Some(cluster) = first_cluster {
            for rep in &reps {
                if rep
                    .first()
                    .and_then(|&c| cluster.column(c))
                    .is_some_and(|cp| !cp.is_suppressed())
                {
                    return rep.clone();
                }
            }
        }
        reps.into_iter().next().unwrap_or_default()
    };
    // Physical columns of non-projected fields, in their original order.
    let mut keep: Vec<u32> = desc
        .fields
        .iter()
        .filter(|f| !f.is_projected())
        .flat_map(|f| chosen(f.id))
        .collect();
    keep.sort_unstable();
    // Fewer columns kept than the u32 ids they come from: the new ids fit too.
    #[allow(clippy::cast_possible_truncation)]
    let renumber: HashMap<u32, u32> = keep
        .iter()
        .enumerate()
        .map(|(new, &old)| (old, new as u32))
        .collect();
    let columns = keep
        .iter()
        .map(|&old| {
            let mut rec = desc.column(old).record.clone();
            rec.representation_index = 0;
            rec.flags &= !COLUMN_FLAG_DEFERRED;
            rec.first_element_index = None;
            rec
        })
        .collect();
    let alias_columns = desc
        .fields
        .iter()
        .filter(|f| f.is_projected())
        .flat_map(|f| {
            chosen(f.id).into_iter().filter_map(|old| {
                renumber.get(&old).map(|&new| AliasColumnRecord {
                    physical_column_id: new,
                    field_id: f.id,
                })
            })
        })
        .collect();
    Ok(SchemaDescription {
        fields,
        columns,
        alias_columns,
        extra_type_infos: Vec::new(),
    })
}

/// The schema of `desc` as it is stored: the header's part and the footer's schema
/// extension (global ids; deferred columns keep their first elements), for a writer that
/// copies its pages. Only the first column representation is kept apart: a field with
/// several is refused.
pub fn schema_for_page_copy(desc: &Descriptor) -> Result<(SchemaDescription, SchemaDescription)> {
    if let Some(c) = desc
        .columns
        .iter()
        .find(|c| c.record.representation_index != 0)
    {
        return Err(Error::Unsupported(format!(
            "field \"{}\" has several column representations (merging copies one)",
            desc.qualified_name(c.record.field_id)
        )));
    }
    let mut parts = [SchemaDescription::default(), SchemaDescription::default()];
    for f in &desc.fields {
        parts[usize::from(f.from_extension)]
            .fields
            .push(f.record.clone());
        if f.is_projected() {
            for &physical in &f.columns {
                parts[usize::from(f.from_extension)]
                    .alias_columns
                    .push(AliasColumnRecord {
                        physical_column_id: physical,
                        field_id: f.id,
                    });
            }
        }
    }
    for c in &desc.columns {
        parts[usize::from(c.from_extension)]
            .columns
            .push(c.record.clone());
    }
    let [mut header, extension] = parts;
    header.extra_type_infos = desc.extra_type_infos.clone();
    Ok((header, extension))
}

/// A schema after a late model extension.
pub(crate) struct ExtendedSchema {
    /// The footer's schema extension: the earlier extensions and the new fields.
    pub extension: SchemaDescription,
    /// The whole schema (no clusters).
    pub descriptor: Descriptor,
    /// The global index of each new column's first element, in column order.
    pub first_elements: Vec<u64>,
}

/// Appends `extra` (a schema of its own, ids from 0) to the schema of `header` and
/// `extension` (as `current` describes them) after `n_entries` entries, as ROOT's model
/// updater does: the new fields' principal columns at entry level are deferred, so that
/// the entries written so far read as zero values; their other columns (a string's
/// characters, a collection's items) start empty.
pub(crate) fn extend_schema(
    header: &Header,
    extension: &SchemaDescription,
    current: &Descriptor,
    mut extra: SchemaDescription,
    n_entries: u64,
) -> Result<ExtendedSchema> {
    let field_base = u32_len(current.fields.len(), || "fields".to_string())?;
    let column_base = u32_len(current.columns.len(), || "columns".to_string())?;
    for (i, f) in extra.fields.iter_mut().enumerate() {
        let own = u32_len(i, || "fields".to_string())?;
        f.parent_id = if f.parent_id == own {
            own + field_base
        } else {
            f.parent_id + field_base
        };
        if let Some(src) = f.source_field_id.as_mut() {
            *src += field_base;
        }
    }
    for c in &mut extra.columns {
        c.field_id += field_base;
    }
    for a in &mut extra.alias_columns {
        a.field_id += field_base;
        a.physical_column_id += column_base;
    }
    let mut extension = extension.clone();
    let first_ext_column = extension.columns.len();
    extension.fields.extend(extra.fields);
    extension.alias_columns.extend(extra.alias_columns);
    extension.columns.extend(extra.columns);
    extension.extra_type_infos.extend(extra.extra_type_infos);
    let build = |extension: &SchemaDescription| {
        let footer = Footer {
            extension: extension.clone(),
            ..Footer::default()
        };
        Descriptor::build(FORMAT_VERSION, header.clone(), footer, Vec::new())
    };
    // Built first to learn the new fields' kinds and places.
    let descriptor = build(&extension)?;
    let mut first_elements = Vec::new();
    for (k, rec) in extension.columns[first_ext_column..].iter_mut().enumerate() {
        let id = column_base
            .checked_add(u32_len(k, || "columns".to_string())?)
            .ok_or_else(|| Error::InvalidArgument("more than 2^32 columns".into()))?;
        // Only a field's principal column counts elements per entry.
        let principal = descriptor.field(rec.field_id).columns.first() == Some(&id);
        let first = match descriptor.elements_per_entry(rec.field_id) {
            Some(mult) if principal => n_entries.saturating_mul(mult),
            _ => 0,
        };
        if first > 0 {
            rec.flags |= COLUMN_FLAG_DEFERRED;
            rec.first_element_index = Some(i64::try_from(first).map_err(|_| {
                Error::InvalidArgument(format!("first element {first} is past 2^63 - 1"))
            })?);
        }
        first_elements.push(first);
    }
    let descriptor = build(&extension)?;
    Ok(ExtendedSchema {
        extension,
        descriptor,
        first_elements,
    })
}
