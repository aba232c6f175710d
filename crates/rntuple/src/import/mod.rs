//! Converting a TTree to an RNTuple: the RNTuple ROOT 6.40's `RNTupleImporter` writes
//! (same fields, names, C++ types, column types and projections), without ROOT.
//!
//! The importer's mapping, top-level branch by branch in order:
//! - a branch of one leaf becomes a field named after the branch, of the leaf's type
//!   (`Char_t` is `char`, `Double32_t` keeps its alias); a fixed array `x[3]/F` becomes
//!   `std::array<float,3>` (nested for more dimensions); a C string `/C` a `std::string`;
//! - a leaf list `a/F:b/I` becomes an untyped record named after the branch;
//! - arrays sized by a count leaf (`x[n]/F`) are grouped per count leaf into untyped
//!   collections `_collection0`, `_collection1`, ... (numbered in the count leaves'
//!   lexicographic order, after the other fields), each holding an untyped record `_0` of
//!   the arrays; every array is then projected as `ROOT::VecOps::RVec<T>` named after its
//!   branch, and the count leaf as `ROOT::RNTupleCardinality<std::uint32_t>`;
//! - the count branches themselves become no field.
//!
//! Reading runs ahead of writing: a thread gathers the next chunk of entries from the
//! baskets (decompressing branches in parallel) while the writer encodes and compresses
//! the current one.

mod branch_values;
mod plan;

pub(crate) use plan::register_classes;
pub use plan::ConversionPlan;

use crate::container::FileWriter;
use crate::error::{Error, Result};
use crate::schema::{arrow_field, Descriptor};
use crate::ttree::{BranchChunk, ChunkReader, Tree, TreeFile, TypeResolver};
use crate::write::{RNTupleOutput, RNTupleWriter, WriteOptions};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{Field, FieldRef, Schema};
use branch_values::fill;
use plan::FieldSource;
use rayon::prelude::*;
use std::sync::Arc;

/// Uncompressed bytes of branch data gathered per chunk of entries.
const CHUNK_BYTES: u64 = 16 << 20;

/// What to convert and how.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    /// The RNTuple's name; the tree's name when `None`.
    pub name: Option<String>,
    /// Glob patterns of the top-level branches to convert (all when empty). Arrays pull
    /// in their count leaves.
    pub branches: Vec<String>,
    /// The entries to convert (`start..end`; an end past the tree's last entry converts
    /// to the end); all when `None`.
    pub entries: Option<(u64, u64)>,
    /// Leave out branches of a type that cannot be converted (reported in
    /// [`ConversionPlan::skipped`]) instead of failing.
    pub skip_unsupported: bool,
    /// Glob patterns of the top-level branches to store unsplit, as streamer fields
    /// (each entry's object as ROOT streams it), even where a split mapping exists; a
    /// branch split in the TTree is joined into whole objects.
    pub unsplit: Vec<String>,
    /// Which of the branches holding objects are stored split, as fields of their own,
    /// and which unsplit, as streamer fields (besides those `unsplit` names).
    pub split_policy: SplitPolicy,
    /// The settings the input is opened with (`None`: the process's,
    /// [`SourceOptions::current`](crate::io::SourceOptions::current)).
    pub read_settings: Option<crate::io::SourceOptions>,
}

/// Which top-level branches holding objects (of classes, or collections of them) become
/// split fields and which streamer fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SplitPolicy {
    /// Split wherever RNTuple has fields for the type (as ROOT's importer).
    #[default]
    Split,
    /// Unsplit wherever the objects can be streamed whole.
    Unsplit,
    /// Each branch in the smaller of the two forms, measured on a sample of its entries
    /// written both ways (CMSSW's partially split layout).
    Auto,
}

/// The sizes the two forms of a branch took on a sample of entries, and the form chosen
/// ([`SplitPolicy::Auto`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitChoice {
    /// The top-level branch.
    pub branch: String,
    /// Entries of the sample.
    pub entries: u64,
    /// Bytes of the sample written split (an RNTuple file of the one field).
    pub split_bytes: u64,
    /// Bytes of the sample written unsplit.
    pub unsplit_bytes: u64,
    /// Whether the branch is stored unsplit.
    pub unsplit: bool,
}

/// What a conversion did.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvertSummary {
    /// Entries written.
    pub entries: u64,
    /// Bytes of the baskets read (as stored in the file).
    pub input_bytes: u64,
    /// Branches left out, each with the reason.
    pub skipped: Vec<String>,
    /// With [`SplitPolicy::Auto`]: each branch that can take either form, the sizes of
    /// both on a sample and the form chosen.
    pub split_choices: Vec<SplitChoice>,
}

/// Converts the tree of `plan` from `file` into `out` (any RNTuple output: a ROOT file,
/// a dataset of objects, a DAOS container) as an RNTuple named `name` (in a file, a path
/// such as `a/b/t` puts RNTuple `t` into directory `a/b`), its anchor stored by the
/// output, last; `progress` gets the entries written so far and the entries to write.
pub fn convert_tree<O: RNTupleOutput>(
    file: &TreeFile,
    plan: &ConversionPlan,
    out: &mut O,
    name: &str,
    options: WriteOptions,
    mut progress: impl FnMut(u64, u64),
) -> Result<ConvertSummary> {
    let schema = plan.builder.clone().finish();
    let (start, end) = plan.entries;
    let total_bytes: u64 = plan.branches.iter().map(|b| b.tot_bytes).sum();
    let all_entries = plan
        .branches
        .iter()
        .map(|b| b.entries)
        .max()
        .unwrap_or(0)
        .max(1);
    let per_entry = (total_bytes / all_entries).max(1);
    let step = (CHUNK_BYTES / per_entry).max(1);
    let mut readers = plan
        .branches
        .iter()
        .map(|b| ChunkReader::new(file.source().clone(), b))
        .collect::<Result<Vec<_>>>()?;
    for b in &plan.branches {
        if b.entries < end {
            return Err(Error::corrupt(
                format!("branch \"{}\"", b.name),
                format!("it has {} entries, the tree {end}", b.entries),
            ));
        }
    }
    // As ROOT's writer: the file describes the classes its streamer fields store.
    out.describe_classes(&plan.streamer_infos);
    let anchor = {
        // "a/b/t": RNTuple "t" (its header's name) in directory a/b (its anchor's path).
        let base = name.trim_matches('/').rsplit('/').next().unwrap_or(name);
        let mut writer = RNTupleWriter::new(&mut *out, base, schema, options)?;
        let targets = target_fields(writer.descriptor(), plan)?;
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Result<RecordBatch>>(1);
        let written = std::thread::scope(|scope| -> Result<u64> {
            let targets = &targets;
            let readers = &mut readers;
            scope.spawn(move || {
                let mut at = start;
                while at < end {
                    let stop = (at + step).min(end);
                    let batch = read_chunk(plan, readers, targets, at, stop);
                    let failed = batch.is_err();
                    if sender.send(batch).is_err() || failed {
                        return;
                    }
                    at = stop;
                }
            });
            let mut written = start;
            for batch in receiver {
                let batch = batch?;
                writer.write_batch(&batch)?;
                written += batch.num_rows() as u64;
                progress(written - start, end - start);
            }
            Ok(written)
        })?;
        if written != end {
            return Err(Error::InvalidArgument(format!(
                "the conversion stopped at entry {written} of {end}"
            )));
        }
        writer.finish()?
    };
    out.write_rntuple_anchor(name, &anchor)?;
    Ok(ConvertSummary {
        entries: end - start,
        input_bytes: plan.input_bytes(),
        skipped: plan.skipped.clone(),
        split_choices: Vec::new(),
    })
}

/// The Arrow field the writer expects for each data field of the plan.
fn target_fields(desc: &Descriptor, plan: &ConversionPlan) -> Result<Vec<FieldRef>> {
    plan.fields
        .iter()
        .map(|(name, _)| {
            let id = desc
                .find_field(name)
                .ok_or_else(|| Error::InvalidArgument(format!("no field \"{name}\"")))?;
            Ok(Arc::new(arrow_field(desc, id, name)?))
        })
        .collect()
}

/// Reads entries `start..stop` of every branch (in parallel) and builds the batch.
fn read_chunk(
    plan: &ConversionPlan,
    readers: &mut [ChunkReader],
    targets: &[FieldRef],
    start: u64,
    stop: u64,
) -> Result<RecordBatch> {
    let chunks = readers
        .par_iter_mut()
        .map(|r| r.read(start, stop))
        .collect::<Result<Vec<BranchChunk>>>()?;
    let columns = plan
        .fields
        .par_iter()
        .zip(targets.par_iter())
        .map(|((name, field_source), target)| {
            fill(field_source, &chunks, plan, target)
                .map_err(|e| e.at(branch_location(name, start, stop)))
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    // Strings are built as bytes (C strings need not be UTF-8): the batch's fields take
    // their columns' types.
    let fields: Vec<Field> = targets
        .iter()
        .zip(&columns)
        .map(|(t, c)| t.as_ref().clone().with_data_type(c.data_type().clone()))
        .collect();
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

fn branch_location(field: &str, start: u64, stop: u64) -> crate::error::Location {
    crate::error::Location {
        field: Some(field.to_string()),
        structure: Some(format!("TTree entries {start}..{stop}")),
        ..Default::default()
    }
}

/// Converts TTree `tree` (or the file's only tree) of the ROOT file at `input` (a path or
/// URL) into a new ROOT file at `output`, written under a temporary name and renamed
/// when complete: on any error nothing appears at `output` (and an existing file there
/// is kept). An existing `output` is refused unless `replace`; `output` may never be
/// the input, whatever the spelling of its path.
pub fn convert_file(
    input: &str,
    tree: Option<&str>,
    output: &std::path::Path,
    options: &ConvertOptions,
    write: WriteOptions,
    replace: bool,
    progress: impl FnMut(u64, u64),
) -> Result<ConvertSummary> {
    use crate::io::{ensure_distinct, AtomicFile, Existing};
    ensure_distinct(output, &[input])?;
    if !replace {
        crate::io::refuse_existing(output)?;
    }
    let planned = plan_file(input, tree, options, &write)?;
    let existing = if replace {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    let mut out =
        FileWriter::create_atomic(AtomicFile::create(output, existing)?, write.compression())?;
    let mut summary = convert_tree(
        &planned.file,
        &planned.plan,
        &mut out,
        &planned.name,
        write,
        progress,
    )?;
    out.finish()?;
    summary.split_choices = planned.split_choices;
    Ok(summary)
}

/// Converts TTree `tree` (or the file's only tree) of the ROOT file at `input` into a
/// new RNTuple of the object-store dataset `dataset` (ROOT's S3 layout), its pages and
/// envelopes stored as objects while they are written (no file in between), the anchor
/// last: a conversion that fails removes the objects it stored and leaves no anchor. An
/// existing dataset is refused unless `replace`, before the input is read.
pub fn convert_to_dataset(
    input: &str,
    tree: Option<&str>,
    dataset: crate::io::ObjectDataset,
    options: &ConvertOptions,
    write: WriteOptions,
    replace: bool,
    progress: impl FnMut(u64, u64),
) -> Result<(ConvertSummary, crate::write::ObjectWriteSummary)> {
    let mut sink = crate::write::ObjectSink::create(dataset, replace)?;
    let planned = plan_file(input, tree, options, &write)?;
    let mut summary = convert_tree(
        &planned.file,
        &planned.plan,
        &mut sink,
        &planned.name,
        write,
        progress,
    )?;
    summary.split_choices = planned.split_choices;
    Ok((summary, sink.summary()?))
}

/// [`convert_to_dataset`] into the dataset `target` names: an object-store URL, with
/// `:NAME` naming the RNTuple written (as `options.name`, with which it must agree),
/// opened with `options.read_settings` (else the process's settings). The URL is
/// checked strictly ([`crate::io::check_layout_url`]) and an input that is the output
/// refused, before anything is read or created.
pub fn convert_to_dataset_url(
    input: &str,
    tree: Option<&str>,
    target: &str,
    options: &ConvertOptions,
    write: WriteOptions,
    replace: bool,
    progress: impl FnMut(u64, u64),
) -> Result<(ConvertSummary, crate::write::ObjectWriteSummary)> {
    let (dataset, name) = crate::write::open_object_target(
        target,
        options.name.as_deref(),
        &[input],
        options.read_settings.as_ref(),
    )?;
    let options = ConvertOptions {
        name,
        ..options.clone()
    };
    convert_to_dataset(input, tree, dataset, &options, write, replace, progress)
}

/// A tree of a file, planned for conversion.
struct PlannedFile {
    file: TreeFile,
    plan: ConversionPlan,
    /// The RNTuple's name: the options', else the tree's path.
    name: String,
    /// With [`SplitPolicy::Auto`], the forms chosen.
    split_choices: Vec<SplitChoice>,
}

/// Opens `input`, finds its TTree `tree` and plans its conversion as `options` say.
fn plan_file(
    input: &str,
    tree: Option<&str>,
    options: &ConvertOptions,
    write: &WriteOptions,
) -> Result<PlannedFile> {
    let file = match &options.read_settings {
        Some(settings) => TreeFile::open(crate::io::open_source_with(input, settings)?)?,
        None => TreeFile::open_path(input)?,
    };
    let (tree_path, tree) = file.tree(tree)?;
    let mut resolver = if tree.all_branches().iter().any(|b| b.element.is_some()) {
        TypeResolver::new(file.streamer_infos()?)
    } else {
        TypeResolver::default()
    };
    let (plan, split_choices) = if options.split_policy == SplitPolicy::Auto {
        let (chosen, choices) = choose_split(&file, &tree, &mut resolver, options, write)?;
        (ConversionPlan::new(&tree, &mut resolver, &chosen)?, choices)
    } else {
        (
            ConversionPlan::new(&tree, &mut resolver, options)?,
            Vec::new(),
        )
    };
    // As the importer: the RNTuple takes the tree's path (a tree in directory a/b
    // becomes an RNTuple in directory a/b of the output).
    let name = options.name.clone().unwrap_or(tree_path);
    Ok(PlannedFile {
        file,
        plan,
        name,
        split_choices,
    })
}

/// Uncompressed bytes of a branch's entries that [`SplitPolicy::Auto`] writes both ways
/// (or all its entries, if fewer).
const SAMPLE_BYTES: u64 = 8 << 20;

/// [`SplitPolicy::Auto`]: for every branch of objects that can be stored either way,
/// writes a sample of its entries (the first, up to [`SAMPLE_BYTES`]) split and unsplit,
/// each as an RNTuple file of that one field in memory, with the output's settings; the
/// options to convert with name the branches whose unsplit sample was smaller.
fn choose_split(
    file: &TreeFile,
    tree: &Tree,
    resolver: &mut TypeResolver,
    options: &ConvertOptions,
    write: &WriteOptions,
) -> Result<(ConvertOptions, Vec<SplitChoice>)> {
    let with = |policy: SplitPolicy| ConvertOptions {
        split_policy: policy,
        ..options.clone()
    };
    let split = ConversionPlan::new(tree, resolver, &with(SplitPolicy::Split))?;
    let unsplit = ConversionPlan::new(tree, resolver, &with(SplitPolicy::Unsplit))?;
    let (start, end) = split.entries;
    let mut chosen = with(SplitPolicy::Split);
    let mut choices = Vec::new();
    for (name, field_source) in &unsplit.fields {
        let stored_whole = |f: &FieldSource| {
            matches!(
                f,
                FieldSource::Opaque { .. } | FieldSource::Restreamed { .. }
            )
        };
        let either = stored_whole(field_source)
            && split
                .fields
                .iter()
                .any(|(n, f)| n == name && !stored_whole(f));
        if !either {
            continue;
        }
        let Some(branch) = tree.branches.iter().find(|b| b.name == *name) else {
            continue;
        };
        let per_entry = (branch.tot_bytes / branch.entries.max(1)).max(1);
        let stop = end.min(start.saturating_add((SAMPLE_BYTES / per_entry).max(1)));
        let mut sizes = [0u64; 2];
        for (size, policy) in sizes
            .iter_mut()
            .zip([SplitPolicy::Split, SplitPolicy::Unsplit])
        {
            let one = ConvertOptions {
                name: None,
                branches: vec![glob::Pattern::escape(name)],
                entries: Some((start, stop)),
                skip_unsupported: false,
                unsplit: Vec::new(),
                split_policy: policy,
                read_settings: None,
            };
            let plan = ConversionPlan::new(tree, resolver, &one)?;
            let mut out = FileWriter::new(
                std::io::Cursor::new(Vec::new()),
                "sample.root",
                write.compression(),
            )?;
            convert_tree(file, &plan, &mut out, &tree.name, write.clone(), |_, _| {})?;
            *size = out.finish_into_inner()?.into_inner().len() as u64;
        }
        let choice = SplitChoice {
            branch: name.clone(),
            entries: stop - start,
            split_bytes: sizes[0],
            unsplit_bytes: sizes[1],
            unsplit: sizes[1] < sizes[0],
        };
        if choice.unsplit {
            chosen.unsplit.push(glob::Pattern::escape(name));
        }
        choices.push(choice);
    }
    Ok((chosen, choices))
}

#[cfg(test)]
mod stl_tests;
