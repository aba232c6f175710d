//! The schema a copy writes: the source's fields with the same types and column types.

use crate::error::Result;
use crate::format::COLUMN_FLAG_DEFERRED;
use crate::format::{AliasColumnRecord, SchemaDescription};
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
