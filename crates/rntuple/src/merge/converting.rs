//! Merging inputs whose field types differ: every value read as the one type that reads
//! the field in all inputs, and written again (pages cannot be copied).

use super::{
    first_compression, open_input, MergeMode, MergeOptions, MergeProgress, MergeSummary,
    OutputCompression,
};
use crate::compression::CompressionSettings;
use crate::error::{Error, Result};
use crate::read::RNTupleReader;
use crate::write::RNTupleOutput;
use crate::write::WriteOptions;
use std::collections::BTreeSet;

/// The one type of each field whose types differ between the inputs (by
/// [`crate::read::unify`]), in the output's field order, or `None` when every input's
/// fields are of the same types (pages are then copied). The output's fields are the
/// first input's (`Filter`, `Strict`); a merge that must both convert and fill fields
/// some inputs lack (`Union`) is refused.
pub(super) fn unified_types(
    inputs: &[String],
    options: &MergeOptions,
) -> Result<Option<Converting>> {
    use crate::read::{unify, FieldOf, ReadAs};
    if inputs.len() < 2 {
        return Ok(None);
    }
    // The type names of the first input's fields in every input, one input open at a
    // time (memory stays bounded whatever the number of inputs).
    let first = open_input(&inputs[0], options.read_settings.as_ref())?;
    let tops: Vec<(String, String)> = first
        .descriptor()
        .top_level
        .iter()
        .map(|&id| {
            let f = first.descriptor().field(id);
            (f.name().to_string(), f.type_name().to_string())
        })
        .collect();
    drop(first);
    let mut differing = BTreeSet::new();
    for target in &inputs[1..] {
        let reader = open_input(target, options.read_settings.as_ref())?;
        let d = reader.descriptor();
        for (name, type_name) in &tops {
            if let Some(id) = d.find_field(name) {
                if d.field(id).type_name() != type_name {
                    differing.insert(name.clone());
                }
            }
        }
    }
    if differing.is_empty() {
        return Ok(None);
    }
    // Types differ: every input's schema, to find the one type of each such field.
    let readers = inputs
        .iter()
        .map(|t| open_input(t, options.read_settings.as_ref()))
        .collect::<Result<Vec<_>>>()?;
    let mut converted = Vec::new();
    for name in tops
        .iter()
        .map(|(n, _)| n)
        .filter(|n| differing.contains(*n))
    {
        let fields: Vec<FieldOf<'_>> = readers
            .iter()
            .zip(inputs)
            .filter_map(|(reader, target)| {
                let d = reader.descriptor();
                d.find_field(name).map(|id| FieldOf {
                    descriptor: d,
                    id,
                    file: target,
                })
            })
            .collect();
        match unify(&fields)? {
            ReadAs::Type(t) => converted.push((name.clone(), t)),
            ReadAs::AsOnDisk => {}
            ReadAs::Record(_) => {
                return Err(Error::Unsupported(format!(
                    "merging field \"{name}\": its records have different members in \
                     different inputs, which a merge cannot write as one type"
                )))
            }
        }
    }
    if options.mode == MergeMode::Union {
        return Err(Error::Unsupported(format!(
            "merge --mode union of inputs whose field types differ ({}): merge them with \
             --mode filter or strict, which read every input as one type",
            converted
                .iter()
                .map(|(n, t)| format!("\"{n}\" as {t}"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(Some(Converting {
        readers,
        plan: converted,
    }))
}

/// A merge whose inputs' field types differ: the inputs, opened, and each such field
/// with the type every input is read as.
pub(super) struct Converting {
    pub(super) readers: Vec<RNTupleReader>,
    pub(super) plan: Vec<(String, String)>,
}

/// Merges `inputs` by reading every value (the fields of `converting.plan` as its
/// types) and writing it again: the first input's fields, each input cluster by cluster.
pub(super) fn merge_converting<O: RNTupleOutput>(
    inputs: &[String],
    file: &mut O,
    options: &MergeOptions,
    converting: &Converting,
    progress: &mut impl FnMut(MergeProgress),
) -> Result<MergeSummary> {
    use crate::read::{ReadAs, ReadTypes, RecordPaths};
    use crate::schema::{ColumnDefaults, SchemaBuilder};
    let (readers, plan) = (&converting.readers, &converting.plan);
    let first = &readers[0];
    let names: Vec<String> = first
        .readable_fields()
        .into_iter()
        .map(|id| first.descriptor().field(id).name().to_string())
        .collect();
    let types = plan.iter().fold(ReadTypes::new(), |t, (n, ty)| {
        t.with_type(n.clone(), ReadAs::Type(ty.clone()))
    });
    let compression = match options.compression {
        OutputCompression::Fixed(c) => c,
        _ => CompressionSettings::from_u32(first_compression(first))?,
    };
    let output = first.projection_as(Some(&names), RecordPaths::Columns, &types)?;
    let mut schema = SchemaBuilder::new(ColumnDefaults { compressed: true });
    for f in output.schema().fields() {
        schema.add_arrow_field(f)?;
    }
    let name = options
        .name
        .clone()
        .unwrap_or_else(|| first.path().to_string());
    let write = WriteOptions::default().with_compression(compression);
    let mut summary = MergeSummary {
        inputs: inputs.len(),
        compression: compression.as_u32(),
        fields_converted: plan.to_vec(),
        ..MergeSummary::default()
    };
    let mut writer = crate::write::RNTupleWriter::new(&mut *file, &name, schema.finish(), write)?;
    for (i, (reader, target)) in readers.iter().zip(inputs).enumerate() {
        let at_input = |e: Error| match e {
            Error::InvalidArgument(m) | Error::NotFound(m) => {
                Error::InvalidArgument(format!("merging input {} ({target}): {m}", i + 1))
            }
            other => other,
        };
        let d = reader.descriptor();
        let extra: Vec<String> = d
            .top_level
            .iter()
            .map(|&f| d.field(f).name().to_string())
            .filter(|n| !names.contains(n))
            .collect();
        if !extra.is_empty() && options.mode == MergeMode::Strict {
            return Err(at_input(Error::InvalidArgument(format!(
                "the input has fields the output lacks: {} (mode strict)",
                extra.join(", ")
            ))));
        }
        summary.fields_dropped.extend(extra);
        let projection = reader
            .projection_as(Some(&names), RecordPaths::Columns, &types)
            .map_err(at_input)?;
        if projection.schema().fields() != output.schema().fields() {
            return Err(at_input(Error::IncompatibleType(
                "its fields read as the merge's types do not give the output's schema".into(),
            )));
        }
        let ranges: Vec<std::ops::Range<u64>> = d
            .clusters
            .iter()
            .map(|c| c.first_entry..c.first_entry + c.n_entries)
            .collect();
        let total = ranges.len().max(1);
        for (k, batch) in reader
            .read_projection_ranges(&projection, ranges)?
            .enumerate()
        {
            let batch = batch?;
            summary.entries += batch.num_rows() as u64;
            writer.write_batch(&batch)?;
            #[allow(clippy::cast_precision_loss)]
            progress(MergeProgress {
                inputs_done: i,
                inputs_total: inputs.len(),
                input_fraction: (k + 1) as f64 / total as f64,
                entries: summary.entries,
            });
        }
        summary.bytes_read += d.compressed_bytes();
    }
    // The last cluster is committed by finish: count it (when it holds entries).
    let open = u64::from(writer.num_entries() > writer.committed_entries());
    summary.clusters = writer.num_clusters() + open;
    let anchor = writer.finish()?;
    file.write_rntuple_anchor(&name, &anchor)?;
    summary.fields_dropped.sort();
    summary.fields_dropped.dedup();
    Ok(summary)
}
