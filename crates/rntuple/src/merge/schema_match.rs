//! An input's schema matched to the output's (see the rules in [`super`]): fields by name,
//! recursively, and the input column that fills each output column; the schema of the
//! fields an input adds by late model extension.

use super::MergeMode;
use crate::encoding::ColumnEncoding;
use crate::error::{Error, Result};
use crate::format::{FieldRecord, SchemaDescription, COLUMN_FLAG_DEFERRED};
use crate::schema::{Descriptor, FieldRole};
use crate::write::extend_schema;
use std::collections::HashMap;

/// The qualified names of `fields`, for messages.
pub(super) fn names(desc: &Descriptor, fields: &[u32]) -> String {
    fields
        .iter()
        .map(|&f| format!("\"{}\"", desc.qualified_name(f)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How an input's schema meets the output's.
pub(super) struct Matched {
    /// Per output column, the input column that fills it (`None`: zeros).
    pub(super) columns: Vec<Option<u32>>,
    /// The input's top-level fields the output lacks.
    pub(super) extra: Vec<u32>,
}

/// Matches `input`'s fields to `out`'s by name (see the module's rules). An output field
/// the input lacks is an error unless `mode` is `Union`.
pub(super) fn match_schemas(
    out: &Descriptor,
    input: &Descriptor,
    mode: MergeMode,
) -> Result<Matched> {
    if let Some(c) = input
        .columns
        .iter()
        .find(|c| c.record.representation_index != 0)
    {
        return Err(Error::Unsupported(format!(
            "field \"{}\" has several column representations (merging copies one)",
            input.qualified_name(c.record.field_id)
        )));
    }
    let by_name = |d: &Descriptor, ids: &[u32]| -> HashMap<String, u32> {
        ids.iter()
            .map(|&id| (d.field(id).name().to_string(), id))
            .collect()
    };
    let input_top = by_name(input, &input.top_level);
    let mut columns = vec![None; out.columns.len()];
    let mut missing = Vec::new();
    for &o in &out.top_level {
        match input_top.get(out.field(o).name()) {
            Some(&i) => match_field(out, o, input, i, &mut columns)?,
            None => missing.push(o),
        }
    }
    if !missing.is_empty() && mode != MergeMode::Union {
        return Err(Error::InvalidArgument(format!(
            "the input lacks fields of the output: {} (mode {}; --mode union fills them with zeros)",
            names(out, &missing),
            match mode {
                MergeMode::Strict => "strict",
                _ => "filter",
            }
        )));
    }
    let out_top = by_name(out, &out.top_level);
    let extra = input
        .top_level
        .iter()
        .copied()
        .filter(|&i| !out_top.contains_key(input.field(i).name()))
        .collect();
    Ok(Matched { columns, extra })
}

/// Checks input field `i` against output field `o` (and their subfields), and records
/// which input column fills each of the output field's columns.
pub(super) fn match_field(
    out: &Descriptor,
    o: u32,
    input: &Descriptor,
    i: u32,
    columns: &mut [Option<u32>],
) -> Result<()> {
    let (of, inf) = (out.field(o), input.field(i));
    let name = out.qualified_name(o);
    let differ = |what: &str, a: String, b: String| {
        Err(Error::InvalidArgument(format!(
            "field \"{name}\": the {what} differs ({a} in the output, {b} in the input)"
        )))
    };
    let source_name = |d: &Descriptor, f: &FieldRecord| {
        f.source_field_id
            .filter(|&s| (s as usize) < d.fields.len())
            .map(|s| d.qualified_name(s))
    };
    if source_name(out, &of.record) != source_name(input, &inf.record) {
        let show = |s: Option<String>| s.map_or("not projected".into(), |s| format!("from {s}"));
        return differ(
            "projection",
            show(source_name(out, &of.record)),
            show(source_name(input, &inf.record)),
        );
    }
    if of.type_name() != inf.type_name() {
        return differ(
            "type",
            format!("\"{}\"", of.type_name()),
            format!("\"{}\"", inf.type_name()),
        );
    }
    if let (Some(a), Some(b)) = (of.record.type_checksum, inf.record.type_checksum) {
        if a != b {
            return differ("type checksum", a.to_string(), b.to_string());
        }
    }
    if of.record.type_version != inf.record.type_version {
        return differ(
            "type version",
            of.record.type_version.to_string(),
            inf.record.type_version.to_string(),
        );
    }
    if of.role != inf.role {
        return differ(
            "structural role",
            format!("{:?}", of.role),
            format!("{:?}", inf.role),
        );
    }
    if of.record.array_size != inf.record.array_size {
        return differ(
            "repetition count",
            format!("{:?}", of.record.array_size),
            format!("{:?}", inf.record.array_size),
        );
    }
    if !of.is_projected() {
        if of.columns.len() != inf.columns.len() {
            return differ(
                "number of columns",
                of.columns.len().to_string(),
                inf.columns.len().to_string(),
            );
        }
        for (&oc, &ic) in of.columns.iter().zip(&inf.columns) {
            let (a, b) = (out.column_encoding(oc)?, input.column_encoding(ic)?);
            if a.column_type.unsplit() != b.column_type.unsplit() {
                return differ(
                    "column type",
                    a.column_type.to_string(),
                    b.column_type.to_string(),
                );
            }
            if a.bits_on_storage != b.bits_on_storage {
                return differ(
                    "bits on storage",
                    a.bits_on_storage.to_string(),
                    b.bits_on_storage.to_string(),
                );
            }
            if a.value_range != b.value_range {
                return differ(
                    "value range",
                    format!("{:?}", a.value_range),
                    format!("{:?}", b.value_range),
                );
            }
            if let Some(slot) = columns.get_mut(oc as usize) {
                *slot = Some(ic);
            }
        }
    }
    if of.children.len() != inf.children.len() {
        return differ(
            "number of subfields",
            of.children.len().to_string(),
            inf.children.len().to_string(),
        );
    }
    for &oc in &of.children {
        let child = inf
            .children
            .iter()
            .copied()
            .find(|&ic| input.field(ic).name() == out.field(oc).name())
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "field \"{name}\": the input has no subfield \"{}\"",
                    out.field(oc).name()
                ))
            })?;
        match_field(out, oc, input, child, columns)?;
    }
    Ok(())
}

/// The schema of `input`'s top-level fields `extra` and their subfields, ids from 0, to
/// add to the output by late model extension.
pub(super) fn extra_schema(input: &Descriptor, extra: &[u32]) -> Result<SchemaDescription> {
    let mut ids = Vec::new();
    let mut stack: Vec<u32> = extra.to_vec();
    while let Some(id) = stack.pop() {
        ids.push(id);
        stack.extend(&input.field(id).children);
    }
    ids.sort_unstable();
    let new_id: HashMap<u32, u32> = ids
        .iter()
        .enumerate()
        .map(|(n, &id)| u32::try_from(n).map(|n| (id, n)))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Error::InvalidArgument("too many fields".into()))?;
    let mut schema = SchemaDescription::default();
    for &id in &ids {
        let f = input.field(id);
        if f.role == FieldRole::Streamer {
            return Err(Error::Unsupported(format!(
                "field \"{}\" is a streamer field: its entries cannot be filled for inputs that lack it (mode union)",
                input.qualified_name(id)
            )));
        }
        let mut rec = f.record.clone();
        rec.parent_id = match f.parent {
            Some(p) => new_id[&p],
            None => new_id[&id],
        };
        if let Some(src) = rec.source_field_id {
            rec.source_field_id = Some(*new_id.get(&src).ok_or_else(|| {
                Error::Unsupported(format!(
                    "projected field \"{}\" shows a field of the first input (mode union)",
                    input.qualified_name(id)
                ))
            })?);
        }
        schema.fields.push(rec);
    }
    let mut column_id = HashMap::new();
    for c in &input.columns {
        if let Some(&field) = new_id.get(&c.record.field_id) {
            let mut rec = c.record.clone();
            rec.field_id = field;
            rec.flags &= !COLUMN_FLAG_DEFERRED;
            rec.first_element_index = None;
            column_id.insert(
                c.id,
                u32::try_from(schema.columns.len()).unwrap_or(u32::MAX),
            );
            schema.columns.push(rec);
        }
    }
    for &id in &ids {
        let f = input.field(id);
        if f.is_projected() {
            for physical in &f.columns {
                let physical_column_id = *column_id.get(physical).ok_or_else(|| {
                    Error::Unsupported(format!(
                        "projected field \"{}\" shows a column of the first input (mode union)",
                        input.qualified_name(id)
                    ))
                })?;
                schema.alias_columns.push(crate::format::AliasColumnRecord {
                    physical_column_id,
                    field_id: new_id[&id],
                });
            }
        }
    }
    schema.extra_type_infos = input.extra_type_infos.clone();
    Ok(schema)
}

/// The output's schema as the reading side follows it (the writer keeps its own copy,
/// changed by the same steps).
pub(super) struct OutputSchema {
    pub(super) header: crate::format::Header,
    pub(super) extension: SchemaDescription,
    pub(super) descriptor: Descriptor,
    /// Per column: its encoding.
    pub(super) encodings: Vec<ColumnEncoding>,
}

impl OutputSchema {
    pub(super) fn new(header: SchemaDescription, extension: SchemaDescription) -> Result<Self> {
        let header = crate::format::Header {
            name: String::new(),
            description: String::new(),
            writer: String::new(),
            schema: header,
        };
        let footer = crate::format::Footer {
            extension: extension.clone(),
            ..Default::default()
        };
        let descriptor = Descriptor::build((1, 0, 0, 0), header.clone(), footer, Vec::new())?;
        let mut schema = OutputSchema {
            header,
            extension,
            descriptor,
            encodings: Vec::new(),
        };
        schema.refresh()?;
        Ok(schema)
    }

    fn refresh(&mut self) -> Result<()> {
        self.encodings = (0..self.descriptor.columns.len())
            .map(|c| {
                let id = u32::try_from(c).map_err(|_| Error::InvalidArgument("columns".into()))?;
                self.descriptor.column_encoding(id)
            })
            .collect::<Result<_>>()?;
        Ok(())
    }

    pub(super) fn extend(&mut self, extra: SchemaDescription, n_entries: u64) -> Result<()> {
        let extended = extend_schema(
            &self.header,
            &self.extension,
            &self.descriptor,
            extra,
            n_entries,
        )?;
        self.extension = extended.extension;
        self.descriptor = extended.descriptor;
        self.refresh()
    }
}
